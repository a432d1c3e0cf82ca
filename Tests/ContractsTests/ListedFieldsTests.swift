import Contracts
import Foundation
import XCTest

/// Each native body's list of fields (`ListedFields`) is exactly its stored properties, which is
/// what it decodes: a field added to a body and not to its list would be refused by ingest.
final class ListedFieldsTests: XCTestCase {
    func testEveryListNamesExactlyTheBodysFields() throws {
        try check(NotificationAPI.SendRequest.self)
        try check(AdminAPI.CreateApp.self)
        try check(AdminAPI.IssueToken.self)
        try check(AdminAPI.UpdateApp.self)
        try check(AdminAPI.SetUserIdentity.self)
        try check(AdminAPI.SetAPNsCredentials.self)
        try check(AdminAPI.SetFCMCredentials.self)
        try check(AdminAPI.CreateAdminToken.self)
    }

    func testTheNestedListsNameExactlyTheirObjectsFields() throws {
        let target = try JSONDecoder().decode(NotificationAPI.Target.self, from: Data("{}".utf8))
        XCTAssertEqual(Set(Mirror(reflecting: target).children.compactMap(\.label)), NotificationAPI.Target.fields)
        XCTAssertEqual(NotificationAPI.SendRequest.nestedFields, ["to": NotificationAPI.Target.fields])
        XCTAssertEqual(AdminAPI.CreateApp.nestedFields, [:])
    }

    private func check<T: ListedFields>(_ type: T.Type, file: StaticString = #filePath, line: UInt = #line) throws {
        // Every field is optional, so `{}` decodes; its stored properties are the keys it decodes.
        let empty = try JSONDecoder().decode(T.self, from: Data("{}".utf8))
        let properties = Set(Mirror(reflecting: empty).children.compactMap(\.label))
        XCTAssertEqual(properties, T.fields, "\(T.self)", file: file, line: line)
    }
}
