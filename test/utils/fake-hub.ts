import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { join } from 'node:path';

export interface FakeHub {
  url: string;
  /** The paths asked for, in order. */
  requests: string[];
  /** Files (e.g. `onnx/model_quantized.onnx`) served with a byte changed, under the original's checksum. */
  corrupt: Set<string>;
  /** How long the large files take to send, spread over their bytes. */
  largeFileMs: number;
  /** False: no ETag or X-Linked-Etag, as a plain file server. */
  checksums: boolean;
  close(): Promise<void>;
}

/**
 * A model hub on 127.0.0.1 laid out as Hugging Face's, serving the files of `dir` as model `model`:
 * `/<model>/resolve/main/<file>`. Small files answer at once with their git blob hash as ETag; the
 * `.onnx` files redirect to a storage path with their sha256 in `X-Linked-Etag`, where they are sent
 * in slices over `largeFileMs`.
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

  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://hub').pathname);
    hub.requests.push(path);
    const prefix = `/${model}/resolve/main/`;
    const stored = path.startsWith('/storage/') ? path.slice('/storage/'.length) : null;
    if (stored && contents.has(stored)) return send(res, stored, true);
    const file = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (!file || !contents.has(file)) return res.writeHead(404).end('Entry not found');
    if (file.endsWith('.onnx')) {
      const etag = `"${sha256.get(file)}"`;
      return res
        .writeHead(302, {
          Location: `/storage/${file}`,
          ...(hub.checksums ? { 'X-Linked-Etag': etag, ETag: etag } : {}),
        })
        .end();
    }
    if (hub.checksums) res.setHeader('ETag', `"${gitHash(contents.get(file)!)}"`);
    send(res, file, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const hub: FakeHub = {
    url: `http://127.0.0.1:${port}`,
    requests: [],
    corrupt: new Set(),
    largeFileMs: 0,
    checksums: true,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return hub;
}
