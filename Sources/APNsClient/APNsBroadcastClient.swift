import Foundation
import HTTPClient
import Locking
import Logging

/// Sends channel management calls and broadcast pushes (iOS 18) over the process's libcurl HTTP/2 stack
/// (`HTTPExchangeClient`), with the team's ES256 provider token, one attempt per call: the caller decides about
/// retries (the publish engine retries broadcasts durably; a management call answers its HTTP caller).
///
/// ```swift
/// let client = try APNsBroadcastClient()
/// let created = await client.manage(.create(.noMessageStored), bundleID: app, endpoints: .sandbox, credentials: creds)
/// let sent = await client.broadcast(request, bundleID: app, endpoints: .sandbox, credentials: creds)
/// await client.shutdown()
/// ```
///
/// Provider tokens come from `ProviderTokenManagers`, one manager per (team, key): given the device client's
/// (`Configuration.tokenManagers`), broadcast calls and device pools hold one token per key between them; the
/// `ProviderTokenStore` keeps a restart or another node from signing a second one within APNs' refresh floor.
package final class APNsBroadcastClient: Sendable {
    /// Settings shared by every call.
    package struct Configuration: Sendable {
        /// One call, from DNS lookup to the last byte.
        package var timeout: Duration = .seconds(30)
        package var connectTimeout: Duration = .seconds(10)
        /// Largest answer accepted (a list of 10,000 channel ids is ~300 KB).
        package var maxResponseBytes = 1 << 20
        package var tokenPolicy = ProviderTokenPolicy()
        package var tokenStore: (any ProviderTokenStore)?
        package var clock: @Sendable () -> Date = { Date() }
        /// The process's token managers, shared with the `APNsClient` (its `APNsClientConfiguration.tokenManagers`)
        /// so both use one token per key. When set, it replaces `tokenPolicy`, `tokenStore` and `clock` for tokens.
        /// Default nil: the client creates its own from those three.
        package var tokenManagers: ProviderTokenManagers?
        package var logger: Logger = .disabled
        package init() {}
    }

    private struct State {
        /// One exchange client per CA file (nil: the system store); bounded by the configured instances.
        var clients: [String: HTTPExchangeClient] = [:]
        var shuttingDown = false
    }

    private let configuration: Configuration
    private let tokenManagers: ProviderTokenManagers
    private let state = Locked(State())

    package init(configuration: Configuration = Configuration()) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        self.configuration = configuration
        tokenManagers =
            configuration.tokenManagers
            ?? ProviderTokenManagers(
                policy: configuration.tokenPolicy, store: configuration.tokenStore, clock: configuration.clock,
                logger: configuration.logger)
    }

    /// One channel management call to `endpoints.managementURL`.
    package func manage(
        _ request: APNsChannelRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials, requestID: String? = nil
    ) async -> APNsBroadcastResult {
        let method: HTTPExchangeMethod = request.method == "POST" ? .post : request.method == "GET" ? .get : .delete
        return await call(
            url: endpoints.managementURL + request.path(bundleID: bundleID), method: method,
            headers: request.headers(requestID: requestID), body: request.body, caFile: endpoints.caFile,
            credentials: credentials)
    }

    /// One broadcast push to `endpoints.sendURL`.
    package func broadcast(
        _ request: APNsBroadcastRequest, bundleID: APNsBundleID, endpoints: APNsBroadcastEndpoints,
        credentials: APNsCredentials
    ) async -> APNsBroadcastResult {
        do {
            try request.validate()
        } catch {
            return .failure(.invalidRequest(error))
        }
        return await call(
            url: endpoints.sendURL + request.path(bundleID: bundleID), method: .post,
            headers: request.headers, body: request.payload, caFile: endpoints.caFile,
            credentials: credentials)
    }

    /// Aborts calls in flight (they end `.shutdown`) and stops the curl threads. Idempotent.
    package func shutdown() async {
        let clients = state.withLock { state -> [HTTPExchangeClient] in
            state.shuttingDown = true
            return Array(state.clients.values)
        }
        for client in clients { await client.shutdown() }
    }

    private func call(
        url text: String, method: HTTPExchangeMethod, headers: [String], body: [UInt8], caFile: String?,
        credentials: APNsCredentials
    ) async -> APNsBroadcastResult {
        let url: HTTPURL
        do {
            url = try HTTPURL(text)
        } catch {
            return .failure(.invalidRequest(.invalidURL(text)))
        }
        let client: HTTPExchangeClient
        do {
            guard let found = try exchangeClient(caFile: caFile) else { return .failure(.shutdown) }
            client = found
        } catch {
            return .failure(.transport(APNsTransportError(kind: .fatal, code: error.code, message: error.description)))
        }
        guard let tokens = tokenManagers.manager(for: credentials) else {
            // Broadcasts need token authentication; certificate credentials cannot sign (as their signer says).
            return .failure(.configuration(.signingFailed(String(describing: CertificateCredentialsSignNoTokens()))))
        }
        var exchange = HTTPExchange(url: url, headers: [], body: body)
        exchange.method = method
        exchange.responseHeaders = APNsBroadcastResponse.headerNames
        var token: ProviderTokenState.Token
        do {
            token = try await tokens.currentToken()
        } catch {
            return .failure(Self.failure(error))
        }
        var refreshed = false
        var adopted = false
        while true {
            exchange.headers = ["authorization: bearer " + token.jwt] + headers
            let result = await Self.send(exchange, on: client)
            let response: HTTPExchangeResponse
            switch result {
            case .failure(let error): return .failure(Self.failure(error))
            case .success(let answer): response = answer
            }
            let parsed = APNsBroadcastResponse.parse(
                status: response.status, headers: response.headers,
                body: response.body)
            guard let reason = parsed.reason else { return .response(parsed) }
            // The device client's rule (`ProviderTokenState.recovery`): one new token after ExpiredProviderToken,
            // other credential faults are the configuration's, not the call's.
            switch ProviderTokenState.recovery(after: reason, refreshed: refreshed) {
            case .refresh?:
                refreshed = true
                do {
                    token = try await tokens.tokenAfterExpiry(generation: token.generation)
                } catch {
                    return .failure(Self.failure(error))
                }
                continue
            case .resolveRejected?:
                // APNs holds a newer token for this key (another process or node signed one): adopt it once;
                // otherwise the answer goes back as a 429 the caller retries later (the engine, for up to the
                // policy's window).
                let outcome: ProviderTokenManager.UpdateRejectedOutcome
                do {
                    outcome = try await tokens.tokenAfterUpdateRejected(generation: token.generation)
                } catch {
                    return .failure(Self.failure(error))
                }
                if case .retryNow(let newer) = outcome, !adopted {
                    adopted = true
                    token = newer
                    continue
                }
                return .response(parsed)
            case .credentialFault?:
                configuration.logger.error(
                    "APNs refused the provider token for a broadcast call",
                    [
                        "team": credentials.teamID, "key": credentials.keyID,
                        "reason": reason.rawValue,
                    ])
                return .failure(.configuration(.rejected(status: parsed.status, reason: reason)))
            case nil:
                return .response(parsed)
            }
        }
    }

    private static func send(_ exchange: HTTPExchange, on client: HTTPExchangeClient) async -> HTTPExchangeResult {
        do {
            return .success(try await client.send(exchange))
        } catch {
            return .failure(error)
        }
    }

    private static func failure(_ error: APNsFailure) -> APNsBroadcastFailure {
        switch error {
        case .configuration(let fault): return .configuration(fault)
        case .transport(let transport, _): return .transport(transport)
        // A broadcast request carries no run scope or deadline, so it never ends cancelled or expired.
        case .shutdown, .cancelled, .expired: return .shutdown
        case .invalidRequest: return .configuration(.signingFailed("\(error)"))
        }
    }

    private static func failure(_ error: HTTPExchangeError) -> APNsBroadcastFailure {
        switch error.kind {
        case .shutdown: return .shutdown
        case .timeout: return .transport(APNsTransportError(kind: .timeout, code: 28, message: error.message))
        case .connection, .responseTooLarge:
            return .transport(APNsTransportError(kind: .connection, code: 7, message: error.message))
        case .invalidURL, .refusedDestination, .internalError:
            return .transport(APNsTransportError(kind: .fatal, code: 0, message: error.message))
        }
    }

    private func exchangeClient(caFile: String?) throws(CurlError) -> HTTPExchangeClient? {
        try state.withLock { (state: inout State) throws(CurlError) -> HTTPExchangeClient? in
            if state.shuttingDown { return nil }
            let clientKey = caFile ?? ""
            let client: HTTPExchangeClient
            if let existing = state.clients[clientKey] {
                client = existing
            } else {
                client = try HTTPExchangeClient(
                    configuration: HTTPExchangeConfiguration(
                        name: "apns-broadcast", connections: 1, caFile: caFile, timeout: configuration.timeout,
                        connectTimeout: configuration.connectTimeout, maxResponseBytes: configuration.maxResponseBytes))
                state.clients[clientKey] = client
            }
            return client
        }
    }
}
