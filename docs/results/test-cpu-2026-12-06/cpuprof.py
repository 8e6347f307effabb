import json, os, resource, time
import pytest

OUT = os.environ.get("CPUPROF_OUT", "/tmp/prof/cpu.jsonl")

def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    w0 = time.time(); s0, c0 = _cpu()
    yield
    s1, c1 = _cpu()
    with open(OUT, "a") as f:
        f.write(json.dumps({"id": item.nodeid, "start": w0, "wall": time.time() - w0,
                            "self": s1 - s0, "child": c1 - c0, "pid": os.getpid(),
                            "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}) + "\n")
