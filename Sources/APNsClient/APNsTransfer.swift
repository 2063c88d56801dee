import CLibCurl
import Foundation
import HTTPClient
import TLSIdentity

/// One reusable curl easy handle and everything C borrows from it while a transfer runs: the request body, the
/// header list, the error buffer and the response collected by the callbacks.
///
/// Owned and used only by one `APNsConnectionDriver` on its loop thread (never Sendable); which job it carries is
/// the state machine's business (`APNsConnectionStateMachine`), keyed by `id`. The handle's options that never
/// change are set once, the destination among them as a parsed URL handle (`CURLOPT_CURLU`); each attempt sets
/// only the URL's path, the body and its size (`load`), and the header list is rebuilt only when the headers differ
/// from the previous attempt on this handle.
final class APNsTransfer {
    /// Distinct per transfer of a connection slot (the ledger's key).
    let id: Int
    let curl: CurlEasy
    private var easy: UnsafeMutableRawPointer { curl.handle }
    /// `CURLOPT_POSTFIELDS` is not copied by curl: the body lives here, allocated once at the largest APNs payload.
    private let body: UnsafeMutablePointer<UInt8>
    private static let bodyCapacity = 5120
    private var bodySize = -1
    private var headers: CurlHeaderList?
    /// The header list last built by any transfer of this one's driver, shared (see `SharedHeaders`).
    private let sharedHeaders: SharedHeaders
    /// The destination, parsed once (`CURLOPT_CURLU`): with `CURLOPT_URL` curl parsed the whole URL string again
    /// for every transfer. Owned here beside the easy handle that reads it; changed only in `load`, between
    /// transfers (curl reads it when a transfer starts and never writes it).
    private let destination: CurlURL
    /// The base URL's own path (empty for `https://host:port`) and `/3/device/`, as bytes.
    private let pathPrefix: [UInt8]
    /// The NUL-terminated `:path` of the attempt being loaded, rebuilt in place (no string per attempt).
    private var path: UnsafeMutablePointer<CChar>
    private var pathCapacity: Int

    /// Whether the handle is attached to the connection's multi.
    var isAttached = false
    /// Response body bytes (error JSON); empty on success.
    var responseBody: [UInt8] = []
    var apnsID: String?
    var apnsUniqueID: String?
    /// The status of the response's status line (0 until one arrived).
    private(set) var status = 0
    /// Called on the loop thread, from inside `curl_multi_perform`, when a final response's header block is
    /// complete (see `APNsStreamLedger.headersComplete`).
    var onHeadersComplete: ((APNsTransfer) -> Void)?
    /// Called on the loop thread, from inside `curl_multi_perform`, when curl has a connection for the request and
    /// is about to send it (each time: curl re-sends a refused request on a fresh connection by itself), with the
    /// connection's local port. Returning false aborts the transfer before any of it is sent
    /// (`CURLE_ABORTED_BY_CALLBACK`; see `APNsStreamLedger.sending`).
    var onSending: ((APNsTransfer, Int) -> Bool)?

    /// - Parameter identity: the client certificate set on this handle for its whole life (certificate
    ///   credentials); a handle never changes identity (curl before 8.21 reuses connections without comparing
    ///   the key options), and each credential has its own pool of handles.
    ///   - sharedHeaders: where the transfers of one driver (one loop thread) find the header list another of them
    ///     built for the same headers.
    init(
        id: Int, environment: APNsEnvironment, identity: TLSClientIdentity?, configuration: APNsClientConfiguration,
        sharedHeaders: SharedHeaders = SharedHeaders()
    ) throws(CurlError) {
        self.sharedHeaders = sharedHeaders
        destination = try CurlURL(environment.baseURL)
        let basePath = destination.part(CURLUPART_PATH) ?? "/"
        pathPrefix =
            Array((basePath.hasSuffix("/") ? String(basePath.dropLast()) : basePath).utf8) + Array("/3/device/".utf8)
        curl = try CurlEasy()
        self.id = id
        body = .allocate(capacity: Self.bodyCapacity)
        pathCapacity = pathPrefix.count + 161  // a 160-character token and the NUL; longer ones grow it
        path = .allocate(capacity: pathCapacity)
        do {
            try configure(environment: environment, configuration: configuration)
            if let identity { try present(identity) }
        } catch {
            close()
            throw error
        }
    }

    private func configure(environment: APNsEnvironment, configuration: APNsClientConfiguration) throws(CurlError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        // `CurlEasy` already set CURLOPT_NOSIGNAL and CURLOPT_ERRORBUFFER.
        // HTTP/2 over TLS only (never h2c prior knowledge); PIPEWAIT multiplexes onto the existing connection
        // instead of opening another while the first one's protocol is still unknown.
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS), "HTTP_VERSION")
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "https"), "CURLOPT_PROTOCOLS_STR")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2), "SSLVERSION")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        // A pool keeps up to `streamsPerConnection` handles per connection for reuse, and with curl's defaults each
        // holds a 16 KiB receive buffer and a 64 KiB upload buffer, most of it never touched: about 100 KiB a
        // handle, 240 MiB of heap for a 6,000-device fan-out, whose pages the kernel then counts in RSS a little
        // more with every reuse (the 60-minute soak's slow RSS rise, docs/BENCHMARKS.md). An APNs answer is a few
        // hundred bytes and a request body at most 5 KiB (VoIP), so the smallest buffers curl allows lose nothing;
        // the HTTP/2 connection reads the socket through a buffer of its own.
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_BUFFERSIZE, 1024), "CURLOPT_BUFFERSIZE")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, 16 * 1024), "CURLOPT_UPLOAD_BUFFERSIZE")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_POST, 1), "CURLOPT_POST")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_POSTFIELDS, body), "CURLOPT_POSTFIELDS")
        try curlCheck(
            ccurl_setopt_ptr(easy, CURLOPT_CURLU, UnsafeMutableRawPointer(destination.handle)), "CURLOPT_CURLU")
        try curlCheck(
            ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(configuration.requestTimeout * 1000)), "TIMEOUT_MS")
        try curlCheck(
            ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000)),
            "CONNECTTIMEOUT")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_TCP_KEEPIDLE, 60), "CURLOPT_TCP_KEEPIDLE")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_TCP_KEEPINTVL, 30), "CURLOPT_TCP_KEEPINTVL")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_MAXAGE_CONN, configuration.maxIdleSeconds), "CURLOPT_MAXAGE_CONN")
        // Apple: "make an uncached DNS query before each connection". curl resolves only when it opens a new
        // connection (reused ones skip resolution), so this costs one lookup per connection, not per request.
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_DNS_CACHE_TIMEOUT, 0), "CURLOPT_DNS_CACHE_TIMEOUT")
        if let caFile = environment.caFile {
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_CAINFO, caFile), "CURLOPT_CAINFO")
        }
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_PRIVATE, me), "CURLOPT_PRIVATE")
        try curlCheck(ccurl_setopt_write_cb(easy, CURLOPT_WRITEFUNCTION, apnsWriteCallback), "WRITEFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try curlCheck(ccurl_setopt_header_cb(easy, apnsHeaderCallback), "HEADERFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
        try curlCheck(ccurl_setopt_prereq_cb(easy, apnsPrereqCallback), "PREREQFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_PREREQDATA, me), "CURLOPT_PREREQDATA")
    }

    /// Sets the client certificate as in-memory blobs (`CURL_BLOB_COPY`: curl keeps its own copy, so nothing
    /// here has to outlive the call). No file is written and no path is read again after start-up.
    private func present(_ identity: TLSClientIdentity) throws(CurlError) {
        switch identity.material {
        case .pkcs12(let der, let password):
            try setBlob(CURLOPT_SSLCERT_BLOB, der, "CURLOPT_SSLCERT_BLOB")
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_SSLCERTTYPE, "P12"), "CURLOPT_SSLCERTTYPE")
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_KEYPASSWD, password), "CURLOPT_KEYPASSWD")
        case .pem(let certificate, let key, let password):
            try setBlob(CURLOPT_SSLCERT_BLOB, certificate, "CURLOPT_SSLCERT_BLOB")
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_SSLCERTTYPE, "PEM"), "CURLOPT_SSLCERTTYPE")
            try setBlob(CURLOPT_SSLKEY_BLOB, key, "CURLOPT_SSLKEY_BLOB")
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_SSLKEYTYPE, "PEM"), "CURLOPT_SSLKEYTYPE")
            if let password {
                try curlCheck(ccurl_setopt_str(easy, CURLOPT_KEYPASSWD, password), "CURLOPT_KEYPASSWD")
            }
        }
    }

    private func setBlob(_ option: CURLoption, _ bytes: [UInt8], _ name: String) throws(CurlError) {
        var copy = bytes
        let code = copy.withUnsafeMutableBytes { buffer -> CURLcode in
            var blob = curl_blob(data: buffer.baseAddress, len: buffer.count, flags: UInt32(CURL_BLOB_COPY))
            return ccurl_setopt_ptr(easy, option, &blob)
        }
        try curlCheck(code, name)
    }

    /// Everything that goes into the header list; a fan-out sends the same headers to every device, so a handle
    /// keeps its list while this stays the same instead of rebuilding ~9 C strings per request.
    fileprivate struct HeaderKey: Equatable {
        var jwt: String?
        var topic: String
        var pushType: APNsPushType
        var priority: APNsPriority?
        var expiration: Int?
        var collapseID: String?
        var apnsID: String?

        /// Whether `request` with `jwt` has these headers, compared in place: building a key per request to
        /// compare copied (retained and released) its strings once per notification.
        func matches(_ request: APNsPreparedRequest, jwt: String?) -> Bool {
            self.jwt == jwt && topic == request.topic && pushType == request.pushType && priority == request.priority
                && expiration == request.expiration && collapseID == request.collapseID && apnsID == request.apnsID
        }
    }

    private var headerKey: HeaderKey?

    /// The header list the transfers of one driver last built, with its headers: a fan-out sends the same headers
    /// to every device, and its drivers start about 2,000 handles at 5,000 devices, each of which built the same
    /// list once (its lines joined, checked for CR, LF and NUL and copied by `curl_slist_append`: 3,400
    /// instructions per notification, callgrind; docs/BENCHMARKS.md, issue 26). A transfer that needs the same
    /// headers takes this list instead; each transfer using it holds it, so it lives until the last one lets go.
    /// Used on the driver's loop thread only, as the transfers are.
    final class SharedHeaders {
        fileprivate var key: HeaderKey?
        fileprivate var list: CurlHeaderList?

        init() {}
    }

    /// Prepares the handle for one attempt of `request` (to its device's path on this handle's destination) with
    /// the bearer token `jwt` (nil: certificate credentials, no `authorization` header).
    func load(_ request: APNsPreparedRequest, jwt: String?) throws(CurlError) {
        responseBody.removeAll(keepingCapacity: true)
        apnsID = nil
        apnsUniqueID = nil
        status = 0
        curl.clearError()

        if headers == nil || headerKey?.matches(request, jwt: jwt) != true {
            freeHeaders()
            if let list = sharedHeaders.list, let key = sharedHeaders.key, key.matches(request, jwt: jwt) {
                try curlCheck(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, list.pointer), "CURLOPT_HTTPHEADER")
                headers = list
                headerKey = key
                return try loadBody(request)
            }
            let key = HeaderKey(
                jwt: jwt, topic: request.topic, pushType: request.pushType, priority: request.priority,
                expiration: request.expiration, collapseID: request.collapseID, apnsID: request.apnsID)
            var lines: [String] = []
            func append(_ line: String) { lines.append(line) }
            if let jwt { append("authorization: bearer " + jwt) }
            append("apns-topic: " + request.topic)
            append("apns-push-type: " + request.pushType.rawValue)
            if let priority = request.priority { append("apns-priority: " + String(priority.rawValue)) }
            if let expiration = request.expiration { append("apns-expiration: " + String(expiration)) }
            if let collapseID = request.collapseID { append("apns-collapse-id: " + collapseID) }
            if let apnsID = request.apnsID { append("apns-id: " + apnsID) }
            // Drop the headers curl adds by default: APNs wants JSON and needs neither.
            append("content-type:")
            append("accept:")
            let list = try CurlHeaderList(lines)
            headers = list
            headerKey = key
            sharedHeaders.key = key
            sharedHeaders.list = list
            try curlCheck(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, list.pointer), "CURLOPT_HTTPHEADER")
        }
        try loadBody(request)
    }

    /// Copies `request`'s payload into the body and sets the device's path (`load`, once the headers are set).
    private func loadBody(_ request: APNsPreparedRequest) throws(CurlError) {
        let count = min(request.payload.count, Self.bodyCapacity)  // header rules keep payloads ≤ 5120
        request.payload.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { body.update(from: base, count: count) }
        }
        if count != bodySize {  // a fan-out's payload has one size: set once per handle, not per request
            try curlCheck(ccurl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, count), "CURLOPT_POSTFIELDSIZE")
            bodySize = count
        }
        try setPath(token: request.deviceToken)
    }

    /// Sets the URL handle's path to `pathPrefix` + `token` (curl copies it).
    private func setPath(token: String) throws(CurlError) {
        var token = token
        let needed = token.withUTF8 { pathPrefix.count + $0.count + 1 }
        if needed > pathCapacity {
            path.deallocate()
            pathCapacity = needed
            path = .allocate(capacity: needed)
        }
        let raw = UnsafeMutableRawPointer(path)
        pathPrefix.withUnsafeBytes {
            if let base = $0.baseAddress { raw.copyMemory(from: base, byteCount: $0.count) }
        }
        token.withUTF8 {
            if let base = $0.baseAddress { (raw + pathPrefix.count).copyMemory(from: base, byteCount: $0.count) }
        }
        path[needed - 1] = 0
        try destination.set(CURLUPART_PATH, path)
    }

    private func freeHeaders() {
        if headers != nil {
            // Unset first: curl must never hold a pointer to a freed list. (Unsetting cannot fail.)
            try? curlCheck(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, nil), "CURLOPT_HTTPHEADER")
        }
        headers = nil
        headerKey = nil
    }

    /// The response status of the finished attempt (0 if none).
    var responseCode: Int { curl.responseCode }

    /// New connections this attempt had to open (0 when it reused one).
    var connectionsOpened: Int { curl.connectionsOpened }

    /// curl's detailed message for the last failure, or its generic one.
    func errorMessage(_ code: CURLcode) -> String { curl.errorMessage(code) }

    /// Frees the handle and buffers; the handle must not be attached to a multi.
    func close() {
        curl.close()
        headers = nil  // after the handle is gone: curl no longer reads the list
        body.deallocate()
        path.deallocate()
    }

    /// Recovers the transfer from `CURLOPT_PRIVATE`.
    static func from(easy: UnsafeMutableRawPointer) -> APNsTransfer? {
        var pointer: UnsafeMutableRawPointer?
        guard (try? curlCheck(ccurl_getinfo_ptr(easy, CURLINFO_PRIVATE, &pointer), "CURLINFO_PRIVATE")) != nil,
            let pointer
        else { return nil }
        return Unmanaged<APNsTransfer>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Records one response header line (`name: value\r\n`), keeping the status and the APNs ids.
    fileprivate func header(_ bytes: UnsafeBufferPointer<UInt8>) {
        // A status line starts a new response (an interim one, in theory): forget earlier headers.
        if let code = HTTPStatusLine.code(of: bytes) {
            apnsID = nil
            apnsUniqueID = nil
            status = code
            return
        }
        // The empty line ends a header block; a final (non-1xx) response's headers are complete.
        if !bytes.isEmpty, bytes.count <= 2, bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            if status >= 200 { onHeadersComplete?(self) }
            return
        }
        if let value = Self.value(of: "apns-id:", in: bytes) {
            apnsID = value
        } else if let value = Self.value(of: "apns-unique-id:", in: bytes) {
            apnsUniqueID = value
        }
    }

    private static func value(of name: StaticString, in line: UnsafeBufferPointer<UInt8>) -> String? {
        let count = name.utf8CodeUnitCount
        guard line.count > count else { return nil }
        let prefix = name.utf8Start
        for index in 0..<count {
            var byte = line[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }  // ASCII lowercase: HTTP/2 names are lowercase anyway
            if byte != prefix[index] { return nil }
        }
        var start = count
        var end = line.count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x0D || line[end - 1] == 0x0A || line[end - 1] == 0x20 { end -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }

    fileprivate func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        // Error bodies are tiny JSON; cap them so a misbehaving server cannot grow memory.
        guard responseBody.count < 16_384 else { return }
        responseBody.append(contentsOf: bytes)
    }
}

// C callbacks: non-capturing, so they convert to curl's function pointer types; the transfer comes back through
// the userdata pointer set to `Unmanaged.passUnretained(self)` (the driver keeps the transfer alive).
private let apnsWriteCallback: curl_write_callback = { data, size, count, userdata in
    deliverBytes(data, size * count, userdata) { $0.append($1) }
}

private let apnsHeaderCallback: curl_write_callback = { data, size, count, userdata in
    deliverBytes(data, size * count, userdata) { $0.header($1) }
}

private let apnsPrereqCallback: curl_prereq_callback = { userdata, _, _, _, localPort in
    guard let userdata else { return CURL_PREREQFUNC_OK }
    let transfer = Unmanaged<APNsTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let send = transfer.onSending?(transfer, Int(localPort)) ?? true
    return send ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
}

/// Hands curl's bytes to the transfer behind `userdata`; returns the count curl expects back (all consumed).
private func deliverBytes(
    _ data: UnsafeMutablePointer<CChar>?, _ total: Int, _ userdata: UnsafeMutableRawPointer?,
    _ body: (APNsTransfer, UnsafeBufferPointer<UInt8>) -> Void
) -> Int {
    guard let userdata, let data else { return total }
    let transfer = Unmanaged<APNsTransfer>.fromOpaque(userdata).takeUnretainedValue()
    data.withMemoryRebound(to: UInt8.self, capacity: total) {
        body(transfer, UnsafeBufferPointer(start: $0, count: total))
    }
    return total
}
