import CLibCurl

/// Owns one curl multi handle: the handle's only Swift owner.
///
/// Not Sendable: curl allows a multi handle on one thread at a time (its `CurlMultiLoop`'s thread), except
/// `curl_multi_wakeup`, which curl documents as callable from any thread; the loop calls `wakeUp()` only while
/// the handle is alive (see `CurlMultiLoop.submit`). `close()` frees it; `deinit` frees it too if the owner
/// forgot. Every return code goes through `curlMultiCheck`.
package final class CurlMulti {
    private let handle: UnsafeMutableRawPointer
    private var closed = false

    /// Creates a multi handle and sets `options` (`CURLMOPT_*` taking a `long`).
    /// - Throws: `CurlError` when curl is out of memory or refuses an option.
    package init(options: [(option: CURLMoption, value: Int, name: String)] = []) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_multi_init() else { throw .outOfMemory("curl_multi_init") }
        self.handle = handle
        do {
            for option in options {
                try curlMultiCheck(ccurl_multi_setopt_long(handle, option.option, option.value), option.name)
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Attaches `easy`; curl starts its transfer on the next `perform()`.
    package func add(_ easy: CurlEasy) throws(CurlError) {
        try curlMultiCheck(curl_multi_add_handle(handle, easy.handle), "curl_multi_add_handle")
    }

    /// Detaches `easy` (finished or aborted); it may be reused or closed afterwards.
    package func remove(_ easy: CurlEasy) throws(CurlError) {
        try curlMultiCheck(curl_multi_remove_handle(handle, easy.handle), "curl_multi_remove_handle")
    }

    /// Detaches a finished transfer's handle, known only by its pointer (from `nextDone()`).
    func remove(handle easy: UnsafeMutableRawPointer) throws(CurlError) {
        try curlMultiCheck(curl_multi_remove_handle(handle, easy), "curl_multi_remove_handle")
    }

    /// Moves every attached transfer forward as far as it can go without waiting. - Returns: the transfers still
    /// running.
    @discardableResult
    package func perform() throws(CurlError) -> Int {
        var running: Int32 = 0
        try curlMultiCheck(curl_multi_perform(handle, &running), "curl_multi_perform")
        return Int(running)
    }

    /// Waits for socket activity, one of curl's own timers, `wakeUp()`, or `timeoutMilliseconds`.
    func poll(timeoutMilliseconds: Int32) throws(CurlError) {
        try curlMultiCheck(curl_multi_poll(handle, nil, 0, timeoutMilliseconds, nil), "curl_multi_poll")
    }

    /// Makes a `poll` in progress (or the next one) return at once. Callable from any thread while the handle is
    /// alive.
    func wakeUp() throws(CurlError) {
        try curlMultiCheck(curl_multi_wakeup(handle), "curl_multi_wakeup")
    }

    /// The next transfer curl has finished since the last `perform()`: its easy handle and result code.
    func nextDone() -> (easy: UnsafeMutableRawPointer, code: CURLcode)? {
        var pending: Int32 = 0
        while let message = curl_multi_info_read(handle, &pending) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            return (easy, ccurl_msg_result(message))
        }
        return nil
    }

    /// Frees the handle; idempotent. Every easy handle must have been removed first.
    package func close() {
        guard !closed else { return }
        closed = true
        _ = try? curlMultiCheck(curl_multi_cleanup(handle), "curl_multi_cleanup")  // nothing left to undo on failure
    }
}

@available(*, unavailable, message: "a curl multi handle belongs to its loop thread")
extension CurlMulti: Sendable {}
