import CLibCurl

/// An absolute `http` or `https` URL, validated by libcurl's own parser.
public struct HTTPURL: Sendable, Equatable, CustomStringConvertible {
    /// Longer URLs are refused: no receiver needs one, and each is stored and logged (redacted).
    package static let maxLength = 8192

    /// The URL as given (may hold basic-auth credentials: never log it; use `redacted`).
    package let text: String
    /// `http` or `https`.
    package let scheme: String
    /// The host as curl reads it, lower case (IPv6 literals in brackets).
    package let host: String
    /// The port, the scheme's default when the URL has none.
    package let port: Int

    /// Why a URL was refused.
    package enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case tooLong
        case malformed(String)
        case unsupportedScheme
        case missingHost

        package var description: String {
            switch self {
            case .tooLong: return "is longer than \(HTTPURL.maxLength) bytes"
            case .malformed(let reason): return "is not a valid URL (\(reason))"
            case .unsupportedScheme: return "must be an http or https URL"
            case .missingHost: return "has no host"
            }
        }
    }

    /// Parses and checks `text`.
    /// - Throws: `ParseError` naming what is wrong.
    package init(_ text: String) throws(ParseError) {
        guard text.utf8.count <= Self.maxLength else { throw .tooLong }
        let url: CurlURL
        do {
            url = try CurlURL(text)
        } catch {
            // A scheme curl does not know (`javascript:`); a missing one (`hooks.example.com/x`) is malformed.
            if error.code == Int(CURLUE_UNSUPPORTED_SCHEME.rawValue) { throw .unsupportedScheme }
            throw .malformed(error.message)
        }
        guard let scheme = url.part(CURLUPART_SCHEME)?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .unsupportedScheme
        }
        guard let host = url.part(CURLUPART_HOST), !host.isEmpty else { throw .missingHost }
        // CURLU_DEFAULT_PORT (1 << 0): the scheme's port when the URL names none.
        guard let portText = url.part(CURLUPART_PORT, flags: 1), let port = Int(portText) else {
            throw .malformed("no port")
        }
        self.text = text
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
    }

    /// The host when it is an IP address literal (`127.0.0.1`, `[::1]`), nil for a name.
    package var literalAddress: IPAddress? {
        if host.hasPrefix("["), host.hasSuffix("]") { return IPAddress(String(host.dropFirst().dropLast())) }
        return IPAddress(host)
    }

    /// `scheme://host:port`: no credentials, path or query, so it is safe for logs, metrics and stored errors.
    package var redacted: String { "\(scheme)://\(host):\(port)" }

    public var description: String { redacted }
}
