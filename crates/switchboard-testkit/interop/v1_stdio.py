"""The Python SDK 1.x's `stdio_client`, less its own teardown race, for the
interop hosts here (python_host.py, python_subscriber.py).

The 1.x client breaks when it is left while the server is still writing
(a notification that arrives as the `async with` ends): its reader task's
send into the already-closed stream raises `anyio.BrokenResourceError` out
of the task group (python-sdk issue #1960; fixed on the SDK's main branch,
still open on v1.x). A gateway may write at any time, so the hosts would
fail at random after every check had passed. This wrapper excuses exactly
that: a group made only of BrokenResourceError, raised after the body ran
to its end. An error in the body, or any other error, still raises.
"""

from contextlib import asynccontextmanager


@asynccontextmanager
async def stdio_client(params):
    import anyio
    from mcp.client.stdio import stdio_client as sdk_stdio_client

    body_done = False
    try:
        async with sdk_stdio_client(params) as streams:
            yield streams
            body_done = True
    except BaseExceptionGroup as group:
        others = group.subgroup(
            lambda e: not isinstance(e, (anyio.BrokenResourceError, BaseExceptionGroup))
        )
        if not body_done or others is not None:
            raise
