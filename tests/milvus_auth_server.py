"""A gRPC server on loopback that answers every call of the Milvus service as a Milvus server
with authentication does when the token is wrong: status UNAUTHENTICATED with Milvus's own
message (its proxy's authentication interceptor). milvus-lite has no authentication, so this is
what the shared index's credential errors are tested against."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc

SERVICE = "/milvus.proto.milvus.MilvusService/"


@dataclass
class AuthServer:
    uri: str
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, decoded credentials)


class _Refuse(grpc.GenericRpcHandler):
    def __init__(self, server: AuthServer) -> None:
        self.server = server

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if not details.method.startswith(SERVICE):
            return None  # grpc answers UNIMPLEMENTED, as Milvus does for an unknown service

        def refuse(request: bytes, context: grpc.ServicerContext) -> None:
            sent = dict(context.invocation_metadata()).get("authorization", "")
            credentials = base64.b64decode(sent).decode() if isinstance(sent, str) else ""
            self.server.calls.append((details.method.removeprefix(SERVICE), credentials))
            kind = "username and password are" if ":" in credentials else "api key is"
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"auth check failure, please check {kind} correct")

        # requests stay serialized bytes: refusing needs none of their fields
        return grpc.unary_unary_rpc_method_handler(refuse)


@contextmanager
def refusing_server() -> Iterator[AuthServer]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    port = server.add_insecure_port("127.0.0.1:0")
    found = AuthServer(f"http://127.0.0.1:{port}")
    server.add_generic_rpc_handlers((_Refuse(found),))
    server.start()
    try:
        yield found
    finally:
        server.stop(grace=None)
