import type { Request } from 'express';
import { canonicalJson, requestFingerprint } from 'src/common/idempotency/idempotency.interceptor.js';

const fakeRequest = (body: unknown, url = '/v1/datasets', file?: Buffer, originalname = 'a.txt') =>
  ({
    method: 'POST',
    originalUrl: url,
    body,
    file: file && { buffer: file, originalname },
  }) as unknown as Request;

describe('canonicalJson', () => {
  it('sorts object keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});

describe('requestFingerprint', () => {
  it('is the same for the same body in another key order', () => {
    expect(requestFingerprint(fakeRequest({ a: 1, b: 2 }))).toEqual(
      requestFingerprint(fakeRequest({ b: 2, a: 1 })),
    );
  });

  it('differs by body, by path and by uploaded file', () => {
    const base = requestFingerprint(fakeRequest({ a: 1 }));
    expect(requestFingerprint(fakeRequest({ a: 2 }))).not.toEqual(base);
    expect(requestFingerprint(fakeRequest({ a: 1 }, '/v1/other'))).not.toEqual(base);
    expect(requestFingerprint(fakeRequest({ a: 1 }, '/v1/datasets', Buffer.from('x')))).not.toEqual(base);
  });

  it("differs by the uploaded file's name, which decides its filename and type", () => {
    const upload = (name: string) =>
      requestFingerprint(fakeRequest({}, '/v1/upload', Buffer.from('x'), name));
    expect(upload('one.txt')).toEqual(upload('one.txt'));
    expect(upload('other.md')).not.toEqual(upload('one.txt'));
  });
});
