import CLibCurl

/// A transfer made for one job and done when curl ends it (`HTTPExchangeTransfer`): its easy
/// handle, and the one way it ends, which reports the result and frees the handle (unless its driver took the
/// handle back for the next job: `HTTPExchangeTransfer.handOverHandle`).
protocol OneShotTransfer: AnyObject {
    associatedtype Success
    var curl: CurlEasy { get }
    /// Reports `result` once and frees the handle (already detached from the multi) unless the driver kept it.
    func finish(_ result: Result<Success, HTTPExchangeError>)
}

/// The one-shot transfers a driver (`HTTPExchangeDriver`) has attached to its multi, by easy
/// handle: attaching a new one, finding the one curl ended, and aborting the rest at shutdown.
///
/// Lives in its driver, so touched only on the driver's loop thread.
struct AttachedTransfers<Transfer: OneShotTransfer> {
    private var byHandle: [UnsafeMutableRawPointer: Transfer] = [:]

    /// Attaches a transfer just made for a job to `multi` and keeps it. When curl refuses it, the transfer
    /// finishes with `internalError` (its completion reports that) and this returns false.
    @discardableResult
    mutating func attach(_ transfer: Transfer, to multi: CurlMulti) -> Bool {
        do {
            try multi.add(transfer.curl)
        } catch {
            transfer.finish(.failure(HTTPExchangeError(.internalError, error.description)))
            return false
        }
        byHandle[transfer.curl.handle] = transfer
        return true
    }

    /// Forgets and returns the transfer curl ended on `easy` (the loop has detached it); nil if it is not one of
    /// these.
    mutating func remove(_ easy: UnsafeMutableRawPointer) -> Transfer? {
        byHandle.removeValue(forKey: easy)
    }

    /// Detaches every transfer, finishes it with `.shutdown` and forgets it.
    mutating func abortAll(multi: CurlMulti) {
        for transfer in byHandle.values {
            try? multi.remove(transfer.curl)  // fails only if not attached: it is detached either way
            transfer.finish(.failure(HTTPExchangeError(.shutdown, "shutting down")))
        }
        byHandle = [:]
    }
}
