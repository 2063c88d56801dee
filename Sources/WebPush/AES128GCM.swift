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
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var written: Int32 = 0
        try check(
            EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)), "EVP_EncryptUpdate")
        var trailing = [UInt8](repeating: 0, count: tagSize)
        var trailingCount: Int32 = 0
        try check(EVP_EncryptFinal_ex(context, &trailing, &trailingCount), "EVP_EncryptFinal_ex")
        guard Int(written) == plaintext.count, trailingCount == 0 else {
            throw CryptoError(
                operation: "EVP_EncryptUpdate",
                messages: ["wrote \(written)+\(trailingCount) of \(plaintext.count) bytes"])
        }
        var tag = [UInt8](repeating: 0, count: tagSize)
        try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), &tag), "EVP_CTRL_GCM_GET_TAG")
        return ciphertext + tag
    }
}
