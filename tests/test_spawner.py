"""Pieces of the spawner (``grader.isolation.spawner``) on their own: what a student
process starts with, and what is left of one after it ends."""

from __future__ import annotations

import os
import stat
import time

from grader.isolation import spawner


def in_child(body) -> int:
    """Run ``body()`` in a forked child; its exit status (0: it returned True)."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if body() else 1)
        except BaseException:  # noqa: BLE001 - a child of the test: never returns
            os._exit(2)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_student_process_starts_with_stdin_open_on_dev_null():
    """fd 0 was closed: /dev/null was opened onto 0 and then closed again."""
    log_r, log_w = os.pipe()

    def body():
        spawner._keep_fds({1: log_w, 2: log_w})
        st = os.fstat(0)
        null = os.stat(os.devnull)
        return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev

    try:
        assert in_child(body) == 0, "fd 0 of a student process is not /dev/null"
    finally:
        os.close(log_r)
        os.close(log_w)


def test_what_a_student_process_leaves_running_ends_with_it():
    """Without a uid or a PID namespace of its own (the landlock and none modes), the
    spawner is the subreaper of what a student process leaves and ends it: here a
    process that left its session and keeps forking."""
    read, write = os.pipe()
    give_up = time.monotonic() + 5  # a stray this test fails to end stops on its own

    def spawner_like():
        spawner._libc.prctl(spawner.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        student = os.fork()
        if student == 0:  # the student process: starts a stray and ends
            if os.fork() == 0:
                os.setsid()
                while time.monotonic() < give_up:
                    try:
                        if os.fork() != 0:
                            os._exit(0)
                    except OSError:
                        time.sleep(0.001)
                os._exit(0)
            os._exit(0)
        os.waitpid(student, 0)
        time.sleep(0.2)
        spawner._end_strays({})
        time.sleep(0.1)
        left = open(f"/proc/self/task/{os.getpid()}/children").read().split()
        os.write(write, str(len(left)).encode())
        return not left

    try:
        code = in_child(spawner_like)
        left = os.read(read, 64).decode()
    finally:
        os.close(read)
        os.close(write)
    assert code == 0, f"{left} processes the student process left are still running"


def test_a_student_process_names_its_temporary_folder_instead_of_probing_it(tmp_path):
    """Asked for its temporary folder the first time, Python writes a probe file there and
    deletes it. A process killed in between (a DataLoader worker stopped early, which first
    needs the folder to pass a tensor) leaves that file in the student's working folder, and
    "writes only where told" then blames the student (seen once in CI, on the reference).
    A student process is told its folder outright, so neither it nor a worker it forks
    ever probes."""
    import tempfile

    opened: list[str] = []

    def body():
        spawner._student_env(str(tmp_path))
        real = os.open
        os.open = lambda path, *a, **k: (opened.append(path), real(path, *a, **k))[1]
        try:
            where = tempfile.gettempdir()
            worker = in_child(lambda: tempfile.mkdtemp(prefix="pymp-") and not opened)
        finally:
            os.open = real
        return where == str(tmp_path) and worker == 0 and not opened

    assert in_child(body) == 0, (
        "a student process (or a child it forked) wrote a probe file into its temporary "
        "folder when first asked for it: spawner._student_env must set tempfile.tempdir"
    )
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("pymp-")] == []
