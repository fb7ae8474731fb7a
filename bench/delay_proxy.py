"""A TCP proxy that delays every byte by a fixed time in each direction: network latency without netem.

bench/cluster.py puts one in front of PostgreSQL and one in front of Redis, in its hub namespace, when
the kernel has no ``sch_netem`` (``tc qdisc add ... netem`` fails: "Specified qdisc kind is unknown").
Each direction is a queue of (due time, bytes): a chunk read now is written ``delay`` later, in order,
without waiting for the chunks before it to be written, so the delay adds latency but caps no throughput.

Usage: python bench/delay_proxy.py LISTEN_HOST:PORT TARGET_HOST:PORT DELAY_MS
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await chunks.get()
            if not data:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(65536):
            chunks.put_nowait((time.monotonic() + delay, data))
    except OSError:
        pass
    chunks.put_nowait((0.0, b""))
    with contextlib.suppress(OSError):
        await sender


async def serve(listen: str, target: str, delay: float) -> None:
    target_host, target_port = target.rsplit(":", 1)

    async def connect(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, int(target_port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay), return_exceptions=True
        )
        for writer in (client_writer, server_writer):
            writer.close()

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(connect, host, int(port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    listen, target, delay_ms = sys.argv[1:4]
    asyncio.run(serve(listen, target, float(delay_ms) / 1000))
