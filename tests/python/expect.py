"""expect.py — what the Python test programs (errors.py, paper_calls.py) share: failures, the list
each check appends a line to, and the checks that a call raises what it should."""
import pcm

failures = []


def expect(code, what, call, *args, last_error=False, **kw):
    """call(*args, **kw) must raise pcm.Error with code and a message (with last_error: the
    message PCM_Last_error gives)."""
    try:
        call(*args, **kw)
    except pcm.Error as e:
        if e.code != code or not e.message or (last_error and e.message != pcm.last_error()):
            failures.append(f"{what}: code {e.code} ({e.message!r}), expected {code}")
        return
    except Exception as e:  # noqa: BLE001
        failures.append(f"{what}: raised {type(e).__name__}: {e}, expected pcm.Error {code}")
        return
    failures.append(f"{what}: no exception, expected pcm.Error {code}")


def expect_type(exc, what, call, *args, **kw):
    """call(*args, **kw) must raise exc (a Python-side misuse: TypeError, ValueError)."""
    try:
        call(*args, **kw)
    except exc:
        return
    except Exception as e:  # noqa: BLE001
        failures.append(f"{what}: raised {type(e).__name__}: {e}, expected {exc.__name__}")
        return
    failures.append(f"{what}: no exception, expected {exc.__name__}")
