"""Workload code is confined by the operating system (llmulator.sandbox), and the C a kernel may hold
is checked before anything compiles it. Each hostile case must fail with a message naming what was
refused, and leave nothing behind: the tests look at the filesystem, a listening socket and the
process table, not only at the exit status."""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import kernel_design
from llmulator import sandbox, usercode
from llmulator.cli import main
from llmulator.errors import UserError

needs_sandbox = pytest.mark.skipif(sandbox.available() is not None,
                                   reason=f"sandbox unavailable: {sandbox.available()}")

HOSTILE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "r");                       /* a secret outside the run folder */
  char buf[64] = {0};
  if (f) { fgets(buf, sizeof buf, f); printf("read:%s\n", buf); }
  FILE *g = fopen(argv[2], "w");                       /* a file outside the run folder */
  if (g) { fputs("pwned", g); fclose(g); printf("wrote\n"); }
  int s = socket(AF_INET, SOCK_STREAM, 0);             /* a connection to the host */
  struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[3]));
  a.sin_addr.s_addr = htonl(0x7f000001);
  if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) printf("connected\n");
  if (fork() == 0) { setsid(); sleep(30); _exit(0); }  /* a daemon that outlives the run */
  if (system("touch marker-from-system") == 0) printf("system\n");
  FILE *h = fopen("inside.txt", "w");                  /* its own folder: allowed */
  if (h) { fputs("ok", h); fclose(h); printf("own folder\n"); }
  return 0;
}
"""


@needs_sandbox
def test_a_compiled_program_reaches_nothing_outside_its_folder(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    outside = tmp_path / "pwned.txt"
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "h.c").write_text(HOSTILE_C)
    subprocess.run(["gcc", "-o", str(run / "h"), str(tmp_path / "h.c")], check=True)
    r = sandbox.run([str(run / "h"), str(secret), str(outside), str(port)], run, sandbox.Limits(wall_s=20))
    assert r.returncode == 0 and "own folder" in r.stdout, (r.stdout, r.stderr)
    assert "TOP-SECRET" not in r.stdout and "read:" not in r.stdout
    assert not outside.exists()  # (a write under /tmp lands in the run's private, discarded tmpfs)
    assert "connected" not in r.stdout
    with pytest.raises(socket.timeout):
        srv.accept()
    srv.close()
    assert "system" not in r.stdout and not list(tmp_path.rglob("marker-from-system"))
    assert (run / "inside.txt").read_text() == "ok"
    time.sleep(0.2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(run / "h") not in ps, "a process of the run outlived it"


@needs_sandbox
def test_the_wall_time_limit_kills_the_whole_group(tmp_path):
    t0 = time.monotonic()
    r = sandbox.run(["/bin/sh", "-c", "while :; do :; done"], tmp_path, sandbox.Limits(wall_s=1.0, cpu_s=30))
    assert r.timed_out and time.monotonic() - t0 < 10


@pytest.mark.parametrize("bad", [-1, 0, float("nan"), float("inf")])
def test_no_limit_value_turns_a_limit_off(bad):
    with pytest.raises(UserError, match="positive, finite"):
        sandbox.Limits(mem_bytes=bad).check()


def test_a_limit_beyond_what_the_kernel_takes_is_a_clear_error(capsys):
    """`--time-limit 1e308` ended in exit 3 (setrlimit failing in the child's start-up); now exit 2."""
    with pytest.raises(UserError, match="at most"):
        sandbox.Limits(wall_s=1e308).check()
    assert main(["profile", "hls-fpga", "atax", "atax-hls-fpga", "--profiler", "hlsim", "--time-limit", "1e308"]) == 2
    assert "at most" in capsys.readouterr().err


def test_without_the_sandbox_workload_code_is_refused_unless_trusted(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: "bubblewrap is not installed (test)")
    monkeypatch.delenv(sandbox.TRUST_ENV, raising=False)
    with pytest.raises(sandbox.Refused, match="bubblewrap is not installed.*--trust-workload"):
        usercode.run_user_code("reference", "w", "y = 1", {}, want=["y"])
    monkeypatch.setenv(sandbox.TRUST_ENV, "1")
    ns = usercode.run_user_code("reference", "w", "y = np.arange(3)", {}, want=["y"])
    assert ns["y"].tolist() == [0, 1, 2]


# --- Python from a workload file: the reference and the input generator ---------------------------

def _ref(code: str, **ns):
    return usercode.run_user_code("reference", "w", textwrap.dedent(code), ns, want=["y"])


@needs_sandbox
@pytest.mark.parametrize("code, refused", [
    ("import os\nos.system('touch {marker}')\ny = np.zeros(3)", None),
    ("y = np.zeros(3)\nopen('{marker}', 'w').write('x')", "PermissionError|FileNotFoundError|OSError"),
    ("y = np.frombuffer(open('/etc/passwd', 'rb').read(), np.uint8)", "FileNotFoundError|PermissionError"),
    ("import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ny = np.zeros(3)",
     "PermissionError|OSError"),
    ("import os\nif os.fork() == 0:\n    import time; time.sleep(60)\ny = np.zeros(3)", "PermissionError|OSError"),
    ("import subprocess\nsubprocess.Popen(['sleep', '613'])\ny = np.zeros(3)", "PermissionError|OSError"),
    ("import sys\ny = np.zeros(3)\nsys.exit(0)", "SystemExit"),
    ("y = np.zeros(3)\nraise SystemExit(0)", "SystemExit"),
])
def test_hostile_reference_code_is_confined(tmp_path, code, refused):
    marker = tmp_path / "marker"
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.2)
    code = code.format(marker=marker, port=srv.getsockname()[1])
    if refused is None:
        _ref(code)  # os.system cannot start a shell (no new processes): it returns an error status
    else:
        with pytest.raises(UserError, match=refused):
            _ref(code)
    assert not marker.exists()
    with pytest.raises(socket.timeout):
        srv.accept()
    srv.close()
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 613" not in ps  # the child the subprocess case would start (a number no one else sleeps)


@needs_sandbox
def test_a_reference_that_never_ends_is_stopped(monkeypatch):
    monkeypatch.setattr(usercode, "LIMITS", sandbox.Limits(wall_s=1.5, cpu_s=30))
    t0 = time.monotonic()
    with pytest.raises(UserError, match="did not finish within 1.5 s"):
        _ref("while True:\n    pass")
    assert time.monotonic() - t0 < 10


def test_patching_numpy_in_the_reference_cannot_make_a_wrong_kernel_pass(write):
    """The reference's NumPy is the child's own: replacing np.array_equal or np.allclose there changes
    nothing in the comparison, which this process makes."""
    from llmulator.library import resolve
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(),
                      "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = x[i] + 1;\n    }",
                      "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}",
                      "    np.array_equal = lambda *a, **k: True\n    np.allclose = lambda *a, **k: True\n"
                      "    y[:] = x + 2",
                      "{}", "{x: BRAM, y: BRAM}")
    from llmulator import plugins
    prof = plugins.get("profilers", "hlsim").profile(d)
    assert prof.functional_check.startswith("fail"), prof.functional_check


def test_reference_results_come_back_as_plain_values():
    ns = _ref("y = [1, 2, 3]\nz = 5")
    assert isinstance(ns["y"], np.ndarray) and ns["y"].tolist() == [1, 2, 3]
    assert "z" not in ns  # only the names asked for come back
    ns = _ref("y = 'not an array'")
    assert type(ns["y"]).__name__ == "str"


def test_a_failing_reference_names_its_line():
    with pytest.raises(UserError, match=r"reference of workload 'w' failed at line 2: ZeroDivisionError"):
        _ref("a = 1\nb = a / 0\ny = np.zeros(2)")


# --- the C a kernel may hold ----------------------------------------------------------------------

def _copy_workload(tmp_path, kernel: str):
    """A one-kernel workload copying x (N = 8) into y, written to tmp_path/w.yaml."""
    import yaml
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"workload": {
        "version": 1, "name": "w", "parameters": {"N": 8},
        "arrays": {"x": {"shape": ["N"], "dtype": "int32", "role": "in"},
                   "y": {"shape": ["N"], "dtype": "int32", "role": "out"}},
        "kernel": kernel.replace("\n    ", "\n") + "\n", "reference": "y[:] = x\n"}}))
    return w


@pytest.mark.parametrize("kernel, refused", [
    ("int system(const char *);\n    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }", "a function declaration"),
    ("L_i: for (int i = 0; i < N; i++) { y[i] = system(\"id\"); }", "a call to 'system'"),
    ("extern double __cyc;\n    __cyc = -1e12;\n    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }",
     "extern declaration"),
    ("double __cyc = 0;\n    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }", "reserved"),
    ("int *p = y;\n    L_i: for (int i = 0; i < N; i++) { p[i] = x[i]; }", "a pointer"),
    ("L_i: for (int i = 0; i < N; i++) { *(y + i) = x[i]; }", "dereference"),
    ("L_i: for (int i = 0; i < N; i++) { y[i] = (int)(long)&x[i]; }", "address-of"),
    ("L_i: for (int i = 0; i < N; i++) { y[i] = ((int *)x)[i]; }", "a pointer"),
    ("L_i: for (int i = 0; i < N; i++) { __asm__(\"nop\"); y[i] = x[i]; }", "a call to '__asm__'"),
    # a local with a workload name: the checks sized `t` by the parameter, C by the local (an outside probe read and
    # wrote the simulator's stack through it and forged the cycle count, the functional check passing)
    ("int N = 1;\n    int t[N];\n    L_i: for (int i = 0; i < 8; i++) { t[i] = x[i]; y[i] = t[i]; }",
     "a local named 'N', the name of a workload parameter"),
    ("L_i: for (int i = 0; i < N; i++) { int x = 0; y[i] = x; }", "a local named 'x', the name of a workload array"),
    ("enum { B = 1 };\n    int t[B];\n    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }", "an enum"),
    ("struct s { int a; };\n    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }", "a struct"),
])
def test_the_kernel_subset_refuses_escapes_at_their_line(tmp_path, capsys, kernel, refused):
    assert main(["validate", str(_copy_workload(tmp_path, kernel))]) == 2
    err = capsys.readouterr().err
    assert refused in err and "not allowed in a kernel" in err and "w.yaml:" in err, err
    assert "Traceback" not in err


def test_profile_refuses_a_negative_memory_limit(capsys):
    rc = main(["profile", "systolic-16x16", "gemm", "gemm-ws-16x16", "--mem-limit", "-1"])
    assert rc == 2 and "positive, finite" in capsys.readouterr().err


def test_a_mismatch_shows_plain_values_and_indices(write):
    from llmulator import plugins
    from llmulator.library import resolve
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(),
                      "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = x[i] - 1;\n    }",
                      "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}",
                      "    y[:] = x", "{}", "{x: BRAM, y: BRAM}")
    check = plugins.get("profilers", "hlsim").profile(d).functional_check
    assert check.startswith("fail: y[0]: got ") and "np." not in check, check


def test_an_infinite_input_does_not_make_a_wrong_kernel_pass(write):
    """The absolute tolerance was 1e-5 of the largest reference value: one inf from the generator made it infinite
    and any output passed (an outside probe passed a wrong GELU). It now scales with the finite values; the inf
    matches itself, and the worst finite difference is named."""
    from llmulator import plugins
    from llmulator.library import resolve
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(),
                      "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = x[i] * 0.25f + 7;\n    }",
                      "    x: {shape: [N], dtype: fp32, role: in}\n    y: {shape: [N], dtype: fp32, role: out}",
                      "    y[:] = x * np.float32(0.5)", "{}", "{x: BRAM, y: BRAM}",
                      inputs="    generator: |\n      x[:] = np.arange(N)\n      x[0] = np.inf")
    check = plugins.get("profilers", "hlsim").profile(d).functional_check
    assert check.startswith("fail: y[63]: got 22.75, reference 31.5"), check


# --- the compiled-kernel cache -----------------------------------------------------------------------

def _gemm():
    from llmulator.design import load_design
    from llmulator.library import resolve
    return load_design(resolve("architecture", "systolic-16x16"), resolve("workload", "gemm"),
                       resolve("mapping", "gemm-ws-16x16"), preset="small")


def test_a_replaced_cached_binary_is_rebuilt_never_run(tmp_path, monkeypatch, capsys):
    from llmulator import plugins
    monkeypatch.setenv("LLMULATOR_CACHE", str(tmp_path / "cache"))
    prof = plugins.get("profilers", "hlsim")
    base = prof.profile(_gemm()).metrics["cycles"]
    (entry,) = [p.parent for p in (tmp_path / "cache").rglob("sim")]
    marker = tmp_path / "planted-ran"
    (entry / "sim").write_text(f"#!/bin/sh\ntouch {marker}\n")
    again = prof.profile(_gemm())
    assert again.metrics["cycles"] == base and not marker.exists()
    assert "did not match its record; rebuilding" in capsys.readouterr().err
    (entry / "entry.json").write_text("{not json")  # a damaged record: rebuilt as well
    assert prof.profile(_gemm()).metrics["cycles"] == base


def test_concurrent_profiles_on_a_cold_cache_all_succeed(tmp_path):
    """Several processes profile one design at once on an empty cache: one builds, the others wait
    for the entry under its lock (before, two of 78 such runs failed to link)."""
    import sys
    env = {**os.environ, "LLMULATOR_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-c", "from llmulator.cli import main; import sys; "
           "sys.exit(main(['profile', 'systolic-16x16', 'gemm', 'gemm-ws-16x16', '--preset', 'small', '--json']))"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert len(list((tmp_path / "cache").rglob("sim"))) == 1


def test_pool_workers_die_with_a_killed_parent(tmp_path):
    """The initializer synth and dse --verify give their workers: SIGKILL the parent and the worker,
    mid-task, is gone too (before, synth's workers stayed alive and deadlocked)."""
    import signal
    import sys
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import time
        from concurrent.futures import ProcessPoolExecutor
        from llmulator.sandbox import die_with_parent
        def task(_):
            import os
            with open({str(tmp_path / 'worker-started.tmp')!r}, 'w') as f:
                f.write(str(os.getpid()))
            os.rename({str(tmp_path / 'worker-started.tmp')!r}, {str(tmp_path / 'worker-started')!r})
            time.sleep(120)
        with ProcessPoolExecutor(1, initializer=die_with_parent) as ex:
            ex.submit(task, 0).result()
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    for _ in range(200):
        if (tmp_path / "worker-started").exists():
            break
        time.sleep(0.05)
    worker = int((tmp_path / "worker-started").read_text())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    # the worker itself, by its pid (before: any "multiprocessing" process on the machine failed this test)
    for _ in range(40):
        stat = Path(f"/proc/{worker}/stat")
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"worker {worker} outlived its killed parent")


def test_a_read_only_path_under_tmp_is_visible_to_the_child(tmp_path):
    """A Python installation (or any read-only path the child needs) that lives under /tmp is mounted after the
    sandbox's own empty /tmp, not hidden by it: a virtual environment in /tmp could not run a reference."""
    if sandbox.available() is not None:
        pytest.skip("no sandbox here")
    shared = tmp_path / "venv"
    shared.mkdir()
    (shared / "marker").write_text("seen")
    work = tmp_path / "work"
    work.mkdir()
    assert str(shared).startswith("/tmp")
    r = sandbox.run(["/bin/cat", str(shared / "marker")], work, sandbox.Limits(wall_s=20), ro_paths=(str(shared),))
    assert r.returncode == 0 and r.stdout.strip() == "seen", r.stderr
    r = sandbox.run(["/bin/sh", "-c", f"echo x > {shared}/new"], work, sandbox.Limits(wall_s=20),
                    ro_paths=(str(shared),))
    assert r.returncode != 0 and not (shared / "new").exists()  # read-only, still


# --- an outside review's attacks on the parent (2026-12-05): each worked before these defences ----------

@needs_sandbox
@pytest.mark.parametrize("code, refused", [
    # /proc/sys holds host-wide settings; as root the child could write them (kernel.core_pattern runs a
    # command as host root): the same value back, harmless, was accepted
    ("v = open('/proc/sys/vm/swappiness').read()\nopen('/proc/sys/vm/swappiness', 'w').write(v)\ny = np.zeros(3)",
     "OSError|Read-only"),
    # threads count against the host's PID space: none start
    ("import threading\nt = threading.Thread(target=lambda: None)\nt.start()\ny = np.zeros(3)", "RuntimeError|Error"),
])
def test_the_child_cannot_touch_host_settings_or_start_threads(code, refused):
    with pytest.raises(UserError, match=refused):
        _ref(code)


@needs_sandbox
def test_links_and_fifos_the_child_leaves_are_not_followed(tmp_path):
    """The child replaces its stderr with a link to a host file, then fails: the message must not show the
    file (it did: an outside review read a secret and the parent's environment this way). A FIFO in the place
    of result.json must not hang the parent, nor /dev/zero fill its memory."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-123\n")
    with pytest.raises(UserError) as e:
        _ref(f"import os\nos.remove('.stderr')\nos.symlink('{secret}', '.stderr')\nos._exit(1)")
    assert "TOPSECRET" not in str(e.value)
    for name, swap in (("result.json", "os.mkfifo('result.json')"),
                       ("result.json", "os.symlink('/dev/zero', 'result.json')"),
                       ("result.npz", "os.symlink('/dev/zero', 'result.npz')")):
        code = f"import os, atexit\ny = np.zeros(3)\natexit.register(lambda: (os.remove('{name}'), {swap}))"
        t0 = time.monotonic()
        with pytest.raises(UserError):
            _ref(code)
        assert time.monotonic() - t0 < 60


@needs_sandbox
def test_a_result_that_declares_a_huge_array_is_refused_before_it_is_loaded():
    """A small compressed archive whose member declares 4 GiB of float32: refused from its header (an outside
    review made the parent allocate 4 GiB this way)."""
    code = textwrap.dedent("""
        import io, json, os, zipfile
        h = io.BytesIO()
        np.lib.format.write_array_header_1_0(h, {'descr': '<f4', 'fortran_order': False, 'shape': (1 << 30,)})
        with zipfile.ZipFile('result.npz', 'w', zipfile.ZIP_DEFLATED) as z:
            with z.open('y.npy', 'w', force_zip64=True) as m:
                m.write(h.getvalue())
                m.write(bytes(1 << 20))
        json.dump({'status': {'ok': True}, 'kinds': {'y': 'array'}}, open('result.json', 'w'))
        os._exit(0)
    """)
    with pytest.raises(UserError, match="at most"):
        usercode.run_user_code("reference", "w", code, {"y": np.zeros(4)}, want=["y"])


FORGED = {
    "nested json": "open('result.json', 'w').write('[' * 200000)",
    "kinds a list": "np.savez('result.npz', y=np.zeros(4))\n"
                    "json.dump({'status': {'ok': True}, 'kinds': ['y']}, open('result.json', 'w'))",
    "unknown compression": textwrap.dedent("""
        with zipfile.ZipFile('result.npz', 'w') as z:
            z.writestr('y.npy', b'x' * 64)
        b = bytearray(open('result.npz', 'rb').read())
        b[8:10] = (99).to_bytes(2, 'little')
        i = b.rfind(b'PK\\x01\\x02') + 10
        b[i:i + 2] = (99).to_bytes(2, 'little')
        open('result.npz', 'wb').write(bytes(b))
        json.dump({'status': {'ok': True}, 'kinds': {'y': 'array'}}, open('result.json', 'w'))"""),
    "many entries": textwrap.dedent("""
        with zipfile.ZipFile('result.npz', 'w') as z:
            for k in range(5000):
                z.writestr(f'm{k}', b'')
        json.dump({'status': {'ok': True}, 'kinds': {'y': 'array'}}, open('result.json', 'w'))"""),
}


@needs_sandbox
@pytest.mark.parametrize("forged", list(FORGED))
def test_results_the_code_forges_are_the_workloads_error(forged):
    """A reference that writes its own result files and leaves (an outside probe): a JSON nested 200,000 deep, a
    list where the kinds' mapping belongs, a member of a compression zipfile does not know, an archive listing
    5,000 members. Each is the workload's error (UserError: exit 2), never an exception of the parent's (exit 3
    blamed the plugin; a generator's, exit 1 with a traceback), and the archive's directory is refused from its
    end record before zipfile reads every member (2,000,000 took the parent to 846 MB)."""
    code = "import json, os, zipfile\n" + FORGED[forged] + "\nos._exit(0)"
    with pytest.raises(UserError, match="did not finish normally|cannot be read"):
        usercode.run_user_code("reference", "w", code, {"y": np.zeros(4)}, want=["y"])


def test_messages_from_workload_code_show_control_characters_escaped():
    with pytest.raises(UserError) as e:
        _ref("raise RuntimeError('\\x1b[2J' + chr(10) + 'functional check: pass')")
    assert "\x1b" not in str(e.value) and "\n" not in str(e.value)


def test_code_longer_than_the_limit_is_refused_before_it_is_compiled():
    with pytest.raises(UserError, match="characters long"):
        _ref("y = [" + "1, " * (usercode.MAX_CODE_CHARS // 3 + 1) + "]")


@pytest.mark.parametrize("decl", ["int m = N + 1;\n    float t[m];", "float t[] = {1, 2, 3};", "float t[(int) 4];",
                                  "float t[(char) 260];"])
def test_a_local_array_without_a_fixed_size_is_refused(tmp_path, capsys, decl):
    """Every subscript is bounds-checked against its array's size: an unsized or run-time sized local array
    could not be (an outside review wrote past one onto the simulator's stack), so validate refuses it."""
    kernel = f"{decl}\n    L_i: for (int i = 0; i < N; i++) {{ t[i % 3] = x[i]; y[i] = t[i % 3]; }}"
    assert main(["validate", str(_copy_workload(tmp_path, kernel))]) == 2
    err = capsys.readouterr().err
    assert "local array 't' has no size fixed before the run" in err and "w.yaml:" in err, err


@needs_sandbox
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the io_uring_setup number below is x86-64's")
def test_io_uring_is_denied():
    """io_uring can open sockets and files without the calls the filter denies (an outside review reached
    io_uring_setup: EFAULT, not EPERM): it is denied outright."""
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(425, 1, None)\n"
            "y = np.array([r, ctypes.get_errno()])")
    got = _ref(code)["y"]
    assert got[0] == -1 and got[1] == 1  # EPERM


@pytest.mark.parametrize("name", ["stderr", "argv", "calloc", "int"])
def test_a_name_the_generated_program_uses_is_refused_at_validate(tmp_path, capsys, name):
    """An array named like the harness's own identifiers validated and then failed to compile in profile with
    gcc's errors on generated code (an outside review): validate refuses it at its line."""
    w = _copy_workload(tmp_path, "L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }")
    w.write_text(w.read_text().replace("y:", f"{name}:").replace("y[i]", f"{name}[i]").replace("y[:]", f"{name}[:]"))
    assert main(["validate", str(w)]) == 2
    err = capsys.readouterr().err
    assert f"invalid name '{name}'" in err and "w.yaml:" in err, err


# --- an outside probe's attacks (2026-12-06): each worked before these defences ---------------------------------

@needs_sandbox
def test_the_users_environment_is_not_visible_to_workload_code(monkeypatch):
    """bwrap is the child's PID 1, and it had the user's whole environment: /proc/1/environ handed tokens and keys
    to the reference (the probe printed its canary in the error message). Every process the child can see has the
    cleared environment only."""
    monkeypatch.setenv("LLMULATOR_PROBE_CANARY", "canary-7f3a")
    code = ("import os\nseen = b''\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
            "            seen += open(f'/proc/{p}/environ', 'rb').read()\n        except OSError:\n            pass\n"
            "y = np.frombuffer(seen, np.uint8)")
    seen = bytes(np.asarray(_ref(code)["y"], np.uint8))
    assert b"PATH=" in seen and b"canary-7f3a" not in seen and b"LLMULATOR_PROBE_CANARY" not in seen


@needs_sandbox
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the syscall numbers below are x86-64's")
def test_another_processs_descriptors_and_the_new_mount_api_are_denied():
    """pidfd_open (434) on PID 1 then pidfd_getfd (438) took bwrap's own descriptors; open_tree (428) is the new
    mount API beside mount(2). Each now fails with EPERM (errno 1)."""
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nout = []\n"
            "for nr, args in ((434, (1, 0)), (428, (-100, b'/', 0))):\n    r = libc.syscall(nr, *args)\n"
            "    out += [r, ctypes.get_errno()]\ny = np.array(out)")
    assert _ref(code)["y"].tolist() == [-1, 1, -1, 1]


def test_a_huge_shift_in_a_branch_condition_is_refused_not_computed():
    """Branch conditions over loop indices are evaluated in this process: `i < (1 << 1073741824)` built a
    2^30-bit integer (an outside probe hung `validate` and `estimate`; a larger count ran out of memory with a
    traceback). A shift count outside [0, 64) is an ExprError, so the branch is priced as one the data decide."""
    from llmulator.expr import ExprError
    from llmulator.kernel_values import holds
    assert holds("i < (1 << 4)", {"i": 3}) and not holds("(i >> 1) > 2", {"i": 5})
    for cond in ("i < (1 << 1073741824)", "i < (1 << -1)", "(i >> 64) == 0"):
        with pytest.raises(ExprError, match="shift by"):
            holds(cond, {"i": 1})


def test_control_characters_from_files_and_workload_code_reach_the_terminal_escaped(tmp_path, capsys, write):
    """A key spelled with a terminal escape and a newline printed both raw (the newline faked a line of our
    output), as did a reference's object whose type name held them (an outside probe)."""
    from llmulator.inputs import run_reference
    from llmulator.library import resolve
    bad = tmp_path / "w.yaml"
    bad.write_text('workload:\n  version: 1\n  name: x\n  "\\e[31mKEY\\nok: fake line": 1\n')
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\nok: fake line" not in err and "\\x1b[31mKEY\\nok: fake line" in err, err
    ref = "    class K:\n        pass\n    K.__name__ = 'K\\x1b[31m\\nok: pass'\n    y = K()"
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(),
                      "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = x[i];\n    }",
                      "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}",
                      ref, "{}", "{x: BRAM, y: BRAM}")
    with pytest.raises(UserError) as e:
        run_reference(d.workload, {"x": np.zeros(64, np.int32)}, d.sizes)
    assert "\x1b" not in str(e.value) and "\n" not in str(e.value) and "K\\x1b[31m\\nok: pass" in str(e.value)


def test_a_file_named_where_a_spec_belongs_is_not_echoed(tmp_path, capsys):
    """A space's `base_mapping: /etc/shadow` (any path) made the error list the file's top-level keys: every line
    ending in `:`, password hashes among them (an outside probe). Since 2026-12-07 a file without a top-level
    `mapping:` key is refused before it is parsed (a later probe read values through YAML errors)."""
    secret = tmp_path / "shadow"
    secret.write_text("alice:$6$salt$hashvalue:19000:0:99999:7::\nbob:$y$j9T$other:19000:0:99999:7::\n")
    space = tmp_path / "s.yaml"
    from llmulator.library import resolve
    text = resolve("space", "gemm-small-systolic").read_text()
    space.write_text(text.replace("base_mapping: gemm-ws-16x16", f"base_mapping: {secret}"))
    assert main(["dse", "systolic-16x16", "gemm", "--space", str(space), "--budget", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "hashvalue" not in err and "alice" not in err and "is not a mapping file" in err, err


def _spinning_reference(tmp_path):
    """(workload, mapping) files of a copy kernel whose NumPy reference never ends."""
    import yaml
    w = _copy_workload(tmp_path, "L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }")
    doc = yaml.safe_load(w.read_text())
    doc["workload"]["reference"] = "while True:\n    pass\n"
    w.write_text(yaml.safe_dump(doc))
    m = tmp_path / "m.yaml"
    m.write_text("mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {x: BRAM, y: BRAM}\n")
    return w, m


@needs_sandbox
def test_profiles_time_limit_bounds_the_reference_too(tmp_path, capsys, monkeypatch):
    """`profile --time-limit 5` bounded the kernel only: a reference that sleeps ran its own 120 s (an outside
    probe). The limit now holds for the reference and the generator of that command."""
    monkeypatch.setattr(usercode, "LIMITS", usercode.LIMITS)  # restored after the test
    w, m = _spinning_reference(tmp_path)
    t0 = time.monotonic()
    assert main(["profile", "hls-fpga", str(w), str(m), "--time-limit", "3"]) == 2
    assert time.monotonic() - t0 < 60
    assert "did not finish within 3 s" in capsys.readouterr().err


@needs_sandbox
def test_a_reference_stopped_by_the_cpu_limit_is_named_a_time_limit(tmp_path, capsys, monkeypatch):
    """The CPU-time limit (SIGXCPU, exit status 152 through bwrap) can fire before the wall clock's: the run
    above once failed with "did not finish normally (exit status 152) ... a crash" on an idle core."""
    import attrs
    monkeypatch.setattr(usercode, "LIMITS", attrs.evolve(usercode.LIMITS, wall_s=60.0, cpu_s=1.0))
    w, m = _spinning_reference(tmp_path)
    assert main(["profile", "hls-fpga", str(w), str(m)]) == 2
    assert "did not finish within 1 s of CPU time" in capsys.readouterr().err


def test_validate_refuses_an_oversized_generator_before_compiling_it(tmp_path, capsys, monkeypatch):
    """Running workload Python refused code over MAX_CODE_CHARS, but `validate` compiled a generator of any size in
    this process for its syntax errors (an outside probe: 3 MB, 1.15 GB of memory)."""
    import yaml
    from llmulator import inputs
    monkeypatch.setattr(inputs, "MAX_CODE_CHARS", 1000)
    w = _copy_workload(tmp_path, "L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }")
    doc = yaml.safe_load(w.read_text())
    doc["workload"]["inputs"] = {"generator": "x[:] = 1\n" * 200}
    w.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(w)]) == 2
    assert "the input generator is 1,800 characters long; at most 1,000" in capsys.readouterr().err


def test_a_kernel_too_long_to_parse_quickly_is_refused(tmp_path, capsys):
    """The kernel is parsed in this process: a 1.4 MB constant initializer took 5 s and 146 MB (an outside probe),
    and a file may be 64 MiB. Over MAX_KERNEL_CHARS the kernel is refused at its line."""
    from llmulator.kernel_parse import MAX_KERNEL_CHARS
    n = MAX_KERNEL_CHARS // 3 + 1
    kernel = (f"const int T[{n}] = {{{', '.join(['1'] * n)}}};\n"
              "    L_i: for (int i = 0; i < N; i++) { y[i] = x[i]; }")
    assert main(["validate", str(_copy_workload(tmp_path, kernel))]) == 2
    assert "the kernel is" in capsys.readouterr().err


@pytest.mark.parametrize(("dim", "extent"), [("13 + (0 - N) % 3", 11), ("20 + (0 - N) / 3", 18),
                                             ("(N * 268435456) / 268435456", 8)])
def test_a_local_arrays_size_is_what_c_declares_and_checks(tmp_path, capsys, dim, extent):
    """The checks took a dimension from Python's evaluation of its text while C compiled the text: `%` and `/`
    differ on negative numbers (checked 15 elements where C had 12; an outside probe wrote past it onto the stack),
    and `(N * 2^28) / 2^28` overflows C's int. The array's size is now computed once, as C computes it without
    overflow, and the program declares it with that number: index `extent` is out of bounds (N = 8)."""
    kernel = f"float t[{dim}];\n    L_i: for (int i = 0; i < N; i++) {{ t[{extent}] = x[i]; y[i] = t[{extent}]; }}"
    w = _copy_workload(tmp_path, kernel)
    m = tmp_path / "m.yaml"
    m.write_text("mapping:\n  version: 1\n  name: m\n  loops: {}\n  placement: {x: BRAM, y: BRAM}\n")
    assert main(["profile", "hls-fpga", str(w), str(m)]) == 2
    assert f"(extent {extent}, valid 0..{extent - 1}" in capsys.readouterr().err


def test_names_from_the_command_line_reach_the_terminal_escaped(capsys):
    """An unknown estimator, variant or library name is echoed in the error; with an escape in it, raw (an outside
    probe). Every `error:` line shows control characters escaped."""
    assert main(["estimate", "hls-fpga", "histogram", "histogram-plain", "--estimator", "x\x1b[31my"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "x\\x1b[31my" in err, err


def test_a_generator_cannot_make_this_process_load_an_array_it_refuses(write):
    """A generator that assigns a large array to an `out` or `temp` name is refused, but the array came back whole
    first (up to 1 GiB per name: an outside probe raised this process's memory to 1.02 GB). Such a name now brings
    back at most 64 bytes."""
    from llmulator.inputs import inputs_for
    from llmulator.library import resolve
    d = kernel_design(write, resolve("architecture", "hls-fpga").read_text(),
                      "    L_i: for (int i = 0; i < N; i++) {\n      y[i] = x[i];\n    }",
                      "    x: {shape: [N], dtype: int32, role: in}\n    y: {shape: [N], dtype: int32, role: out}",
                      "    y[:] = x", "{}", "{x: BRAM, y: BRAM}",
                      inputs="    generator: |\n      x[:] = 1\n      y = np.zeros(4_000_000)")
    with pytest.raises(UserError, match="'y' holds 32,000,000 bytes"):
        inputs_for(d, "0", None)
