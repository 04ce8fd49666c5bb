import type { Request } from 'express';
import { originIssue } from 'src/modules/mcp/mcp-origins.js';

function request(host: string, origin?: string): Request {
  return {
    protocol: 'http',
    headers: origin === undefined ? {} : { origin },
    get: (name: string) => (name === 'host' ? host : undefined),
  } as unknown as Request;
}

const derived = { publicBaseUrl: null, mcpOrigins: [] };

describe('originIssue', () => {
  it('lets clients outside a browser through: they send no Origin', () => {
    expect(originIssue(request('evil.example.com'), derived)).toBeNull();
  });

  it("takes the request's own origin only at a loopback address", () => {
    for (const host of ['127.0.0.1:3000', 'localhost:3000', '[::1]:3000', 'LocalHost:8080']) {
      const origin = `http://${host.toLowerCase()}`;
      expect([host, originIssue(request(host, origin), derived)]).toEqual([host, null]);
    }
    // DNS rebinding: the attacker's name resolves here, so its page is "same-origin".
    expect(originIssue(request('evil.example.com', 'http://evil.example.com'), derived)).toContain(
      'http://evil.example.com',
    );
  });

  it("takes PUBLIC_BASE_URL's origin and MCP_ORIGINS, and nothing else", () => {
    const config = { publicBaseUrl: 'https://search.example.com', mcpOrigins: ['http://localhost:6274'] };
    expect(originIssue(request('search.example.com', 'https://search.example.com'), config)).toBeNull();
    expect(originIssue(request('search.example.com', 'http://localhost:6274'), config)).toBeNull();
    expect(originIssue(request('127.0.0.1:3000', 'http://127.0.0.1:3000'), config)).not.toBeNull();
    expect(originIssue(request('search.example.com', 'null'), config)).not.toBeNull();
  });
});
