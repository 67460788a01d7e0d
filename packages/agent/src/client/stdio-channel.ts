/** Turning a bridge process (`runsc exec ... agent.mjs bridge`) into the byte stream an AgentClient needs. */
import type { ChildProcess } from 'node:child_process';
import { Duplex } from 'node:stream';
import { RamifyError } from '@ramify/contracts';

/**
 * A `Duplex` whose writes go to the child's stdin and whose reads come from its stdout. Spawn the child
 * with `stdio: ['pipe', 'pipe', <file or 'pipe'>]`. The stream ends when the child's stdout ends.
 * @throws RamifyError INTERNAL when the child has no stdin/stdout pipes.
 */
export function childStdioChannel(child: ChildProcess): Duplex {
  if (!child.stdin || !child.stdout) throw new RamifyError('INTERNAL', 'bridge process needs piped stdin and stdout');
  return Duplex.from({ readable: child.stdout, writable: child.stdin });
}
