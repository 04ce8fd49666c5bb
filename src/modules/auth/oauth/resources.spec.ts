import type { Request } from 'express';
import { AppError } from 'src/common/errors/app-error.js';
import { resourceMetadataUrl, resourceOfRequest, serviceBase } from 'src/modules/auth/oauth/resources.js';

function request(path: string, host = 'api.example.com'): Request {
  return {
    path,
    protocol: 'https',
    get: (name: string) => (name === 'host' ? host : undefined),
  } as unknown as Request;
}

const derived = { publicBaseUrl: null };

describe('resources', () => {
  it('addresses the MCP endpoint as routing matches it: any case, a trailing slash', () => {
    for (const path of [
      '/v1/mcp',
      '/v1/mcp/',
      '/V1/MCP',
      '/v1/Mcp//',
      '/v1/mcp/datasets/ds_1',
      '/v1/MCP/datasets/x/',
    ]) {
      expect([path, resourceOfRequest(request(path), derived)]).toEqual([
        path,
        'https://api.example.com/v1/mcp',
      ]);
    }
  });

  it('addresses every other route to the REST API, the REST routes under /v1/mcp/ included', () => {
    for (const path of [
      '/v1/datasets',
      '/v1/mcp/query',
      '/v1/mcpx',
      '/v1/mcp/datasets',
      '/v1/mcp/datasets/a/b',
    ]) {
      expect([path, resourceOfRequest(request(path), derived)]).toEqual([path, 'https://api.example.com/v1']);
    }
  });

  it('takes PUBLIC_BASE_URL over the Host header', () => {
    const config = { publicBaseUrl: 'https://search.example.com' };
    expect(serviceBase(request('/v1/datasets', 'evil.example'), config)).toBe('https://search.example.com');
  });

  it.each(['evil.example/path', 'evil.example?x=1', 'a b', ''])(
    'refuses a Host that is not only a host: %j',
    (host) => {
      expect(() => serviceBase(request('/v1/datasets', host), derived)).toThrow(AppError);
      expect(resourceMetadataUrl(request('/v1/datasets', host), derived)).toBeNull();
    },
  );

  it('publishes the metadata of each resource at its own well-known address (RFC 9728)', () => {
    expect(resourceMetadataUrl(request('/v1/datasets'), derived)).toBe(
      'https://api.example.com/.well-known/oauth-protected-resource/v1',
    );
    expect(resourceMetadataUrl(request('/v1/mcp'), derived)).toBe(
      'https://api.example.com/.well-known/oauth-protected-resource/v1/mcp',
    );
    expect(resourceMetadataUrl(request('/v1/mcp/datasets/ds_1'), derived)).toBe(
      'https://api.example.com/.well-known/oauth-protected-resource/v1/mcp',
    );
  });
});
