import Contracts
import Foundation
import Synchronization

/// Makes one attempt of one outbound record at its provider (docs/ARCHITECTURE.md#delivery):
/// opens the app's credentials, takes a provider token, builds the request, sends it over the
/// app's connection and reads the answer.
///
/// Each (app, provider, environment) has a lane: its own HTTP/2 connection and at most
/// `appConcurrency` requests in the air, so that one app's slow answers hold only its own
/// streams; all lanes together hold at most `concurrency` requests.
public final class Pusher: Sendable {
    private let opener: CredentialOpener
    private let endpoints: ProviderEndpoints
    private let caFile: String?
    private let timeout: Duration
    private let appConcurrency: Int
    private let slots: Slots
    private let apnsTokens = APNsProviderTokens()
    private let fcmTokens = FCMAccessTokens()
    /// The client of Google's token endpoints.
    private let tokenClient: ProviderClient
    private let lanes = Mutex<[LaneKey: Lane]>([:])

    private struct LaneKey: Hashable {
        var app: UUID
        var provider: PushProvider
        var environment: APNsEnvironment?
    }

    private struct Lane: Sendable {
        let client: ProviderClient
        let slots: Slots
        /// When a push last took this lane.
        var used: ContinuousClock.Instant
    }

    public init(keyring: SecretsKeyring, endpoints: ProviderEndpoints, caFile: String?, timeout: Duration,
                concurrency: Int, appConcurrency: Int) throws {
        opener = CredentialOpener(keyring: keyring)
        self.endpoints = endpoints
        self.caFile = caFile
        self.timeout = timeout
        self.appConcurrency = appConcurrency
        slots = Slots(concurrency)
        tokenClient = try ProviderClient(caFile: caFile, timeout: timeout)
    }

    public func shutdown() async {
        let all = lanes.withLock { lanes in
            defer { lanes = [:] }
            return Array(lanes.values)
        }
        for lane in all { try? await lane.client.shutdown() }
        try? await tokenClient.shutdown()
    }

    /// One attempt of `record`, with the credentials of its platform.
    public func attempt(_ record: OutboundPush, credentials: PushCredentials, expiresAt: Date) async -> PushAttempt {
        switch record.platform {
        case .ios:
            guard let apns = credentials.apns else { return .noCredentials(.apns) }
            return await attemptAPNs(record, apns, expiresAt: expiresAt)
        case .android:
            guard let fcm = credentials.fcm else { return .noCredentials(.fcm) }
            return await attemptFCM(record, fcm, expiresAt: expiresAt)
        }
    }

    private func attemptAPNs(_ record: OutboundPush, _ credentials: APNsCredentials, expiresAt: Date) async -> PushAttempt {
        let key: APNsSigningKey
        let request: APNsRequest
        do {
            key = try opener.apnsKey(app: record.mobileAppId, credentials)
        } catch {
            return .outcome(.credentialsRejected(reason: "\(error)"))
        }
        do {
            request = try APNsRequest.make(record, bundleId: credentials.bundleId, expiresAt: expiresAt)
        } catch {
            return .badRecord("\(error)")
        }
        let baseURL = endpoints.apns(credentials.environment)
        guard let lane = lane(LaneKey(app: record.mobileAppId, provider: .apns, environment: credentials.environment)) else {
            return .outcome(.retry(reason: "no HTTP client", retryAfter: nil))
        }
        // ExpiredProviderToken: the token in use is too old for Apple (a clock moved); one
        // new token is tried before the app counts as refused.
        for fresh in [false, true] {
            let jwt: String
            do {
                jwt = try await apnsTokens.token(for: key)
            } catch {
                return .outcome(.credentialsRejected(reason: "the provider token could not be signed: \(error)"))
            }
            let outcome = await send(on: lane) { await lane.client.send(request, baseURL: baseURL, jwt: jwt) }
            if case .credentialsRejected("ExpiredProviderToken") = outcome, !fresh {
                apnsTokens.invalidate(key)
                continue
            }
            return .outcome(outcome)
        }
        return .outcome(.credentialsRejected(reason: "ExpiredProviderToken"))
    }

    private func attemptFCM(_ record: OutboundPush, _ credentials: FCMCredentials, expiresAt: Date) async -> PushAttempt {
        let account: FCMServiceAccount
        let request: FCMRequest
        do {
            account = try opener.fcmAccount(app: record.mobileAppId, credentials)
        } catch {
            return .outcome(.credentialsRejected(reason: "\(error)"))
        }
        do {
            request = try FCMRequest.make(record, projectId: account.projectId, expiresAt: expiresAt)
        } catch {
            return .badRecord("\(error)")
        }
        guard endpoints.allowsTokenURI(account.tokenURI) else {
            return .outcome(.credentialsRejected(reason: "the service account's token_uri \(RedactedURL.string(account.tokenURI)) is neither "
                + "Google's token endpoint nor on PUSHLINE_FCM_URL's host"))
        }
        guard let lane = lane(LaneKey(app: record.mobileAppId, provider: .fcm)) else {
            return .outcome(.retry(reason: "no HTTP client", retryAfter: nil))
        }
        // A 401 may be an access token Google stopped honouring: one new token is tried
        // before the app counts as refused.
        for fresh in [false, true] {
            let accessToken: String
            switch await fcmTokens.token(for: account, client: tokenClient) {
            case .token(let token, _): accessToken = token
            case .refused(let reason): return .outcome(.credentialsRejected(reason: reason))
            case .retry(let reason, let retryAfter): return .outcome(.retry(reason: reason, retryAfter: retryAfter))
            }
            let outcome = await send(on: lane) {
                await lane.client.send(request, baseURL: self.endpoints.fcm, accessToken: accessToken)
            }
            if case .credentialsRejected = outcome, !fresh {
                fcmTokens.invalidate(account)
                continue
            }
            return .outcome(outcome)
        }
        return .outcome(.credentialsRejected(reason: "UNAUTHENTICATED"))
    }

    private func send(on lane: Lane, _ request: () async -> AttemptOutcome) async -> AttemptOutcome {
        guard await lane.slots.acquire() else { return .retry(reason: "the sender is stopping", retryAfter: nil) }
        defer { lane.slots.release() }
        guard await slots.acquire() else { return .retry(reason: "the sender is stopping", retryAfter: nil) }
        defer { slots.release() }
        return await request()
    }

    private func lane(_ id: LaneKey) -> Lane? {
        let now = ContinuousClock.now
        return lanes.withLock { lanes in
            if lanes[id] != nil {
                lanes[id]!.used = now
                return lanes[id]
            }
            guard let client = try? ProviderClient(caFile: caFile, timeout: timeout) else { return nil }
            let lane = Lane(client: client, slots: Slots(appConcurrency), used: now)
            lanes[id] = lane
            return lane
        }
    }

    /// Closes the connections of lanes no push took for `idle` and none uses: an app that
    /// stopped sending does not keep a connection to its provider open for ever. Its next push
    /// opens a new lane.
    public func closeIdleLanes(idle: Duration) async {
        let now = ContinuousClock.now
        let closed = lanes.withLock { lanes in
            let idleLanes = lanes.filter { now - $0.value.used >= idle && $0.value.slots.allFree }
            for id in idleLanes.keys { lanes[id] = nil }
            return Array(idleLanes.values)
        }
        for lane in closed { try? await lane.client.shutdown() }
    }

    /// How many lanes are open.
    public var laneCount: Int { lanes.withLock { $0.count } }
}

extension PushCredentials {
    /// What changes whenever the credentials of `provider` are set again (each seal is new):
    /// a pause lasts while it stays the same. Nil when there are none.
    public func version(of provider: PushProvider) -> String? {
        switch provider {
        case .apns: apns?.privateKey.box
        case .fcm: fcm?.serviceAccount.box
        }
    }
}
