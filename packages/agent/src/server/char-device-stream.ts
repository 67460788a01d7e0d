/**
 * A byte stream over an open character device (a virtio-serial port) that runs on libuv's epoll loop,
 * not on the threadpool.
 *
 * Node's public constructors refuse a character device: `new net.Socket({ fd })` throws
 * ERR_INVALID_FD_TYPE ("Unsupported fd type: FILE": libuv's uv_guess_handle reports character devices
 * as files) and `tty.ReadStream` wants a terminal. `fs` streams would work, but each pending read parks
 * one of the four threadpool threads in a blocking read(2) for as long as the host stays silent, and a
 * blocking write(2) on a port whose host went away sleeps until some host connects again (the Linux
 * driver's `wait_port_writable`), then delivers the rest of the old frame to the new host; neither can
 * be cancelled. Instead the fd is opened O_NONBLOCK and handed to the same libuv pipe handle Node uses
 * for stdio pipes (`uv_pipe_open` accepts any pollable fd; the virtio_console driver implements poll):
 * reads and writes happen when epoll says so, a short write is continued by libuv, EOF (the host went
 * away, or seemed to: see {@link continueCharDeviceStream}) ends the stream, and destroying the stream
 * closes the fd and drops unsent bytes.
 * The handle comes from `process.binding('pipe_wrap')`: deprecated (DEP0111, documentation-only in Node
 * 18-22) but on Node's allow-list of bindings, and exactly what Node builds for a piped stdin.
 */
import { Socket } from 'node:net';
import { getSystemErrorName } from 'node:util';

interface PipeHandle {
  open(fd: number): number;
}

interface PipeWrapBinding {
  Pipe: new (type: number) => PipeHandle;
  constants: { SOCKET: number };
}

function pipeWrap(): PipeWrapBinding {
  const binding = (process as unknown as { binding?: (name: string) => unknown }).binding;
  if (typeof binding !== 'function') throw new Error(`this Node (${process.version}) has no process.binding: cannot stream a character device`);
  const b = binding('pipe_wrap') as Partial<PipeWrapBinding>;
  if (typeof b.Pipe !== 'function' || typeof b.constants?.SOCKET !== 'number') throw new Error(`this Node (${process.version}) has no usable pipe_wrap binding`);
  return b as PipeWrapBinding;
}

/**
 * Wrap `fd` (open read-write; it is switched to non-blocking mode) in a `net.Socket` that owns it:
 * `destroy()` closes the fd. The socket is created with `allowHalfOpen`, so EOF only emits `end`; the
 * caller decides when to destroy. Writes must be whole messages: unsent bytes are dropped on destroy.
 * @throws Error when the fd cannot be polled (e.g. a regular file) or the Node build lacks the binding.
 */
export function openCharDeviceStream(fd: number): Socket {
  const { Pipe, constants } = pipeWrap();
  const handle = new Pipe(constants.SOCKET);
  const rc = handle.open(fd);
  if (rc < 0) throw new Error(`cannot poll fd ${fd}: ${getSystemErrorName(rc)}`);
  return new Socket({ handle, readable: true, writable: true, allowHalfOpen: true } as ConstructorParameters<typeof Socket>[0]);
}

/**
 * A fresh stream on the fd of `ended`, a stream from {@link openCharDeviceStream} that read EOF (`end`)
 * but still owns its fd (it was opened `allowHalfOpen` and not destroyed): reading starts again on the
 * same libuv handle, which stopped polling at EOF but kept the fd. Used when a virtio port's EOF was
 * not the end: the guest kernel handles "host left"/"host came" control events out of order with the
 * data queue, so after a restore the agent can read a stale "host left" after the new host's first
 * bytes; closing the fd then would discard the bytes that follow (the kernel drops a port's unread
 * input on close). `ended` gives up the fd (it can no longer close it) and loses its listeners.
 * @throws Error when `ended` was destroyed or still has writes pending (wait for `writableLength` 0).
 */
export function continueCharDeviceStream(ended: Socket): Socket {
  const internals = ended as unknown as { _handle: PipeHandle | null };
  const handle = internals._handle;
  if (!handle || ended.destroyed) throw new Error('the stream was destroyed: its fd is closed');
  if (ended.writableLength > 0) throw new Error(`the stream still has ${ended.writableLength} bytes of writes pending`);
  ended.removeAllListeners();
  internals._handle = null;
  // libuv stopped reading at EOF, but Node's flag on the handle still says it reads: the new stream
  // would not start reading.
  (handle as PipeHandle & { reading?: boolean }).reading = false;
  return new Socket({ handle, readable: true, writable: true, allowHalfOpen: true } as ConstructorParameters<typeof Socket>[0]);
}
