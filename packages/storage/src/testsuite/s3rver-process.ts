/**
 * Runs s3rver in a process of its own (as a real S3 server would be: its CPU is not the daemon's):
 * `node s3rver-process.js DIR PORT BUCKET [ADDRESS]` (default 127.0.0.1); prints `{"port":N}` on stdout once it listens, stops on SIGTERM.
 */
import S3rver from 's3rver';

const [directory, port, bucket, listenAddress = '127.0.0.1'] = process.argv.slice(2);
const server = new S3rver({ address: listenAddress, port: Number(port), silent: true, directory, configureBuckets: [{ name: bucket! }] });
const address = await server.run();
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
process.on('SIGTERM', () => {
  server.httpServer.closeAllConnections();
  void server.close().finally(() => process.exit(0));
});
