import ArgumentParser
import Contracts
import Foundation

extension Apps {
    /// `pushline apps list`: every projected app, following the admin API's pages to the end.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every app, ordered by mobileAppId (as the projection store has them).",
            discussion: """
                Follows the pages of GET /admin/v1/apps to the end. An app created a moment ago shows \
                once the processor has applied it.

                Examples:
                  pushline apps list
                  pushline apps list --json | jq -r '.apps[].mobileAppId'
                """
        )

        @Option(name: .customLong("page-size"), help: "Apps asked for per request (1...1000).") var pageSize = 100
        @OptionGroup var admin: AdminOptions

        func validate() throws {
            guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be between 1 and 1000, not \(pageSize)") }
        }

        func run() async throws {
            let client = try admin.client()
            var apps: [AdminAPI.AppView] = []
            var after: UUID?
            while true {
                let path = "/admin/v1/apps?limit=\(pageSize)" + (after.map { "&after=\($0)" } ?? "")
                let data = try await client.call(.GET, path, expected: 200, subject: .appList)
                let page = try client.decode(AdminAPI.AppList.self, from: data)
                apps += page.apps
                guard let next = page.next else { break }
                // A server that answers the same page again would make this loop forever.
                guard next != after, !page.apps.isEmpty else { throw CLIError("ingest at \(client.baseURL) repeated the page after \(next)") }
                after = next
            }
            if admin.json { return try Output.json(AdminAPI.AppList(apps: apps, next: nil)) }
            guard !apps.isEmpty else { return print("no apps (yet)") }
            print(Output.table(["MOBILEAPPID", "ORGID", "TOKENS", "CALLBACK", "NAME"], apps.map { app in
                [app.mobileAppId.uuidString, app.orgId.uuidString, "\(app.tokens.filter { !$0.revoked }.count)",
                 app.callbackUrl == nil ? "-" : "yes", app.name]
            }, rightAligned: [2]))
            print("\(apps.count) app\(apps.count == 1 ? "" : "s")")
        }
    }
}
