import COpenSSL

/// AES-256-GCM sealing of small secrets at rest (the Beams secrets of rolled instances): `nonce ‖ ciphertext ‖ tag`
/// with a fresh random 12-byte nonce per seal, so sealing the same secret twice gives different bytes. The
/// associated data binds a sealed value to where it is stored (instance and key id): a value copied to another row
/// does not open.
package struct SecretSeal: Sendable {
    static let nonceSize = 12
    static let tagSize = 16
    private let key: [UInt8]

    /// - Parameter key: 32 bytes.
    package init(key: [UInt8]) throws(CryptoError) {
        guard key.count == 32 else {
            throw CryptoError(operation: "SecretSeal", messages: ["the key has \(key.count) bytes, not 32"])
        }
        self.key = key
    }

    /// A key derived from a passphrase-like text: SHA-256 of its UTF-8 bytes (the operator gives `openssl rand
    /// -base64 32` or any long random text; the text itself is the secret).
    package init(deriving text: String) throws(CryptoError) {
        try self.init(key: SHA256.hash(Array(text.utf8)))
    }

    package func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        let nonce = try SecureRandom.bytes(Self.nonceSize)
        let context = try check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }
        try check(EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce), "EVP_EncryptInit_ex")
        var written: Int32 = 0
        try check(
            EVP_EncryptUpdate(context, nil, &written, associatedData, Int32(associatedData.count)),
            "EVP_EncryptUpdate(aad)")
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        try check(
            EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)), "EVP_EncryptUpdate")
        var trailing: Int32 = 0
        try ciphertext.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            _ = try check(
                EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(written), &trailing), "EVP_EncryptFinal_ex")
        }
        ciphertext.removeLast(ciphertext.count - Int(written + trailing))
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagSize), &tag), "EVP_CTRL_GCM_GET_TAG")
        return nonce + ciphertext + tag
    }

    /// - Throws: `CryptoError` when the value was not sealed with this key and associated data, or was altered.
    package func open(_ sealed: [UInt8], associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.nonceSize + Self.tagSize else {
            throw CryptoError(operation: "SecretSeal.open", messages: ["sealed value too short"])
        }
        let nonce = Array(sealed[0..<Self.nonceSize])
        let ciphertext = Array(sealed[Self.nonceSize..<(sealed.count - Self.tagSize)])
        var tag = Array(sealed[(sealed.count - Self.tagSize)...])
        let context = try check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }
        try check(EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce), "EVP_DecryptInit_ex")
        var written: Int32 = 0
        try check(
            EVP_DecryptUpdate(context, nil, &written, associatedData, Int32(associatedData.count)),
            "EVP_DecryptUpdate(aad)")
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        try check(
            EVP_DecryptUpdate(context, &plaintext, &written, ciphertext, Int32(ciphertext.count)), "EVP_DecryptUpdate")
        try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagSize), &tag), "EVP_CTRL_GCM_SET_TAG")
        var trailing: Int32 = 0
        let verified = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + Int(written), &trailing)
        }
        guard verified == 1 else {
            OpenSSLErrorQueue.clear()
            throw CryptoError(operation: "SecretSeal.open", messages: ["the sealed value does not open with this key"])
        }
        plaintext.removeLast(plaintext.count - Int(written + trailing))
        return plaintext
    }
}
