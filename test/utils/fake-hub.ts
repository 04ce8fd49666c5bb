import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';

export interface FakeHub {
  url: string;
  /** The storage large files are redirected to: another origin, as Hugging Face's CDN is. */
  storageUrl: string;
  /** The paths asked for, of the hub and of its storage, in order. */
  requests: string[];
  /** The `Accept-Encoding` of each request, in order. */
  acceptEncodings: (string | undefined)[];
  /** Files (e.g. `onnx/model_quantized.onnx`) served with a byte changed, under the original's checksum. */
  corrupt: Set<string>;
  /** How long the large files take to send, spread over their bytes. */
  largeFileMs: number;
  /** False: no ETag or X-Linked-Etag, as a plain file server. */
  checksums: boolean;
  /**
   * `storage`: the hub's redirect of a large file declares nothing, and the storage answers with the
   * file's sha256 as its own ETag (which a download must not take for the hub's word).
   */
  checksumAt: 'hub' | 'storage';
  close(): Promise<void>;
}

/**
 * A model hub on 127.0.0.1 laid out as Hugging Face's, serving the files of `dir` as model `model`:
 * `/<model>/resolve/main/<file>`. Small files answer at once with their git blob hash as ETag; the
 * `.onnx` files redirect to a storage server of their own (another port, so another origin) with
 * their sha256 in `X-Linked-Etag`, where they are sent in slices over `largeFileMs`.
 */
export async function startFakeHub(dir: string, model: string, files: readonly string[]): Promise<FakeHub> {
  const contents = new Map(files.map((file) => [file, readFileSync(join(dir, file))]));
  const sha256 = new Map(
    [...contents].map(([file, data]) => [file, createHash('sha256').update(data).digest('hex')]),
  );
  const gitHash = (data: Buffer) =>
    createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');

  const send = (res: ServerResponse, file: string, slowly: boolean) => {
    const data = Buffer.from(contents.get(file)!);
    if (hub.corrupt.has(file)) data[data.length >> 1] ^= 0xff;
    res.writeHead(200, { 'Content-Length': data.length, 'Content-Type': 'application/octet-stream' });
    if (!slowly) return res.end(data);
    const slices = 20;
    const size = Math.ceil(data.length / slices);
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return clearInterval(timer);
      res.write(data.subarray(i * size, (i + 1) * size));
      if (++i === slices) {
        clearInterval(timer);
        res.end();
      }
    }, hub.largeFileMs / slices);
  };
  const record = (req: IncomingMessage) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://hub').pathname);
    hub.requests.push(path);
    hub.acceptEncodings.push(req.headers['accept-encoding']);
    return path;
  };

  const storage = createServer((req, res) => {
    const path = record(req);
    const file = path.startsWith('/storage/') ? path.slice('/storage/'.length) : null;
    if (!file || !contents.has(file)) return res.writeHead(404).end('Not found');
    // A storage's ETag is its own business (S3's is an MD5, or not a hash at all).
    res.setHeader('ETag', hub.checksumAt === 'storage' ? `"${sha256.get(file)}"` : '"storage-1"');
    send(res, file, true);
  });
  const server = createServer((req, res) => {
    const path = record(req);
    const prefix = `/${model}/resolve/main/`;
    const file = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (!file || !contents.has(file)) return res.writeHead(404).end('Entry not found');
    if (file.endsWith('.onnx')) {
      const etag = `"${sha256.get(file)}"`;
      const declared = hub.checksums && hub.checksumAt === 'hub';
      return res
        .writeHead(302, {
          Location: `${hub.storageUrl}/storage/${file}`,
          ...(declared ? { 'X-Linked-Etag': etag, ETag: etag } : {}),
        })
        .end();
    }
    if (hub.checksums) res.setHeader('ETag', `"${gitHash(contents.get(file)!)}"`);
    send(res, file, false);
  });
  const listen = async (s: typeof server) => {
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
  };
  const stop = (s: typeof server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  const hub: FakeHub = {
    url: await listen(server),
    storageUrl: await listen(storage),
    requests: [],
    acceptEncodings: [],
    corrupt: new Set(),
    largeFileMs: 0,
    checksums: true,
    checksumAt: 'hub',
    close: async () => {
      await stop(server);
      await stop(storage);
    },
  };
  return hub;
}
