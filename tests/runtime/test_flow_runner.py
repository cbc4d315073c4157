"""The warm runner's socket lives in the Prefect home however deep that is: a path longer than a Unix socket
address holds (a test's tmp_path under pytest-xdist is one) is reached through /proc/self/fd, not refused."""

import socket
import threading

from forum_atlas.runtime import flow_runner


def test_a_socket_deeper_than_a_unix_address_holds_is_served_and_reached(tmp_path):
    home = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5)
    home.mkdir(parents=True)
    path = home / "atlas-runner-0123456789abcdef.sock"
    assert len(str(path).encode()) >= flow_runner._SOCKET_PATH_MAX

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with flow_runner._address(path) as address:
        listener.bind(address)
    listener.listen(1)
    assert path.is_socket(), "the socket file is in the home itself"
    accepted = threading.Thread(target=lambda: listener.accept()[0].sendall(b"ok"))
    accepted.start()
    conn = flow_runner._connect(path)
    assert conn is not None and conn.recv(2) == b"ok"
    conn.close()
    accepted.join(5)
    listener.close()


def test_no_listener_is_no_connection(tmp_path):
    assert flow_runner._connect(tmp_path.joinpath(*["deep-enough-folder-name"] * 5, "none.sock")) is None
