import JWTSigner

enum ES256PrivateKeyLoader {
    static func load(_ pem: String) throws -> ES256PrivateKey { try ES256PrivateKey(pem: pem) }
}
