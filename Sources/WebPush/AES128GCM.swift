import COpenSSL
import JWTSigner

/// AES-128-GCM sealing without associated data, as RFC 8188 records use it.
enum AES128GCM {
    static let keySize = 16
    static let nonceSize = 12
    static let tagSize = 16

    /// `ciphertext ‖ tag` of `plaintext` (GCM is a stream mode: the ciphertext is as long as the plaintext).
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == keySize, nonce.count == nonceSize, !plaintext.isEmpty, plaintext.count <= Int(Int32.max)
        else {
            throw CryptoError(
                operation: "AES128GCM.seal",
                messages: ["key \(key.count) B, nonce \(nonce.count) B, plaintext \(plaintext.count) B"])
        }
        let context = try check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }
        // The default GCM IV length is 12 bytes, the nonce size RFC 8188 derives.
        // The fetched cipher when there is one (`FetchedAlgorithms`: no lookup by name per message).
        if let cipher = FetchedAlgorithms.shared.aes128GCM {
            try check(EVP_EncryptInit_ex2(context, cipher, key, nonce, nil), "EVP_EncryptInit_ex2")
        } else {
            try check(EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce), "EVP_EncryptInit_ex")
        }
        // One buffer: the ciphertext, then the tag behind it (GCM's final step writes nothing).
        var sealed = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        var written: Int32 = 0
        var trailingCount: Int32 = 0
        try sealed.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) in
            guard let base = buffer.baseAddress else { return }
            try check(
                EVP_EncryptUpdate(context, base, &written, plaintext, Int32(plaintext.count)), "EVP_EncryptUpdate")
            guard Int(written) == plaintext.count else { return }
            try check(EVP_EncryptFinal_ex(context, base + plaintext.count, &trailingCount), "EVP_EncryptFinal_ex")
            guard trailingCount == 0 else { return }
            try check(
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), base + plaintext.count),
                "EVP_CTRL_GCM_GET_TAG")
        }
        guard Int(written) == plaintext.count, trailingCount == 0 else {
            throw CryptoError(
                operation: "EVP_EncryptUpdate",
                messages: ["wrote \(written)+\(trailingCount) of \(plaintext.count) bytes"])
        }
        return sealed
    }
}
