"""The harness's net for crashes: a server that dies of a crash signal fails the module that started it, with its
log in the message, even when no assertion looked at its exit status; and the servers it starts write every
thread's stack to that log when they crash (the Swift runtime's backtracer). A rare crash on a CI machine (a
SIGSEGV at shutdown, seen once) then leaves its cause in the CI output instead of a bare exit status."""
import os
import signal

import pytest

from harness import Environment, swift_backtracer, wait_logged


def test_a_server_that_dies_of_a_crash_signal_fails_the_environment_with_its_log(tmp_path):
    environment = Environment(tmp_path)
    # Without the backtracer, so that the signal's default action ends the process (see the next test).
    server = environment.server(environment.mock(), environ={**os.environ, "SWIFT_BACKTRACE": "enable=no"})
    server.proc.send_signal(signal.SIGSEGV)
    assert server.proc.wait(timeout=30) == -signal.SIGSEGV
    with pytest.raises(AssertionError) as failure:
        environment.close()
    message = str(failure.value)
    assert "died of SIGSEGV" in message and "Listening" in message, message


def test_a_crash_signal_makes_the_server_log_every_threads_stack(tmp_path):
    if swift_backtracer() is None:
        pytest.skip("the Swift toolchain's swift-backtrace-static is not installed here")
    environment = Environment(tmp_path)
    server = environment.server(environment.mock())
    # A fault's SIGSEGV comes back when the handler returns and ends the process; one sent with kill(2) does not,
    # so the process lives on after its backtrace and is killed here.
    server.proc.send_signal(signal.SIGSEGV)
    log = wait_logged(server.log_path, "Backtrace took", timeout=60)
    assert "*** Program crashed" in log and "crashed:" in log, log[-3000:]
    assert "http-loop-" in log and "store-writer" in log, log[-3000:]  # every thread, by its name
    server.kill9()
    environment.close()


def test_a_server_stopped_or_killed_on_purpose_is_not_a_crash(tmp_path):
    environment = Environment(tmp_path)
    stopped = environment.server(environment.mock(), name="stopped")
    killed = environment.server(environment.mock(), name="killed")
    assert stopped.stop() == 0
    killed.kill9()
    killed.start()
    environment.close()  # raises on a crash
    assert stopped.crashes == [] and killed.crashes == []
