import FuzzSupport
import TLSIdentity

/// One libFuzzer input: a certificate's DER as a .p12 or PEM file on disk would hand it over (an operator's file,
/// but one that reached them from elsewhere). The first byte picks the reader: the whole certificate's extensions, or
/// Apple's topics extension on its own (the input inside an extension otherwise needs a valid certificate around it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDER(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size, controlBytes: 1) else { return 0 }
    let der = input.bytes
    if input.control[0] & 1 == 0 {
        guard let extensions = try? X509Extensions(certificateDER: der) else { return 0 }
        _ = APNsCertificateEnvironments(extensions)
        if let topics = extensions.values[APNsTopicsExtension.oid] {
            _ = try? APNsTopicsExtension(der: topics)
        }
    } else {
        _ = try? APNsTopicsExtension(der: der)
    }
    return 0
}
