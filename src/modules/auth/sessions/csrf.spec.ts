import type { Request } from 'express';
import { allowedOrigins, crossSiteIssue } from 'src/modules/auth/sessions/csrf.js';

const OWN = 'https://search.example.com';

function request(method: string, headers: Record<string, string>): Request {
  return {
    method,
    headers,
    protocol: 'https',
    get: (name: string) => (name.toLowerCase() === 'host' ? 'search.example.com' : undefined),
  } as unknown as Request;
}

describe('crossSiteIssue', () => {
  it.each(['GET', 'HEAD', 'OPTIONS'])('lets a %s through whatever its origin', (method) => {
    const headers = { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' };
    expect(crossSiteIssue(request(method, headers), [OWN])).toBeNull();
  });

  it.each(['same-origin', 'none'])('lets a write marked Sec-Fetch-Site: %s through', (site) => {
    expect(crossSiteIssue(request('POST', { 'sec-fetch-site': site }), [OWN])).toBeNull();
  });

  it('lets a cross-site write from an allowed origin through', () => {
    const headers = { 'sec-fetch-site': 'same-site', origin: 'https://app.example.com' };
    expect(crossSiteIssue(request('PATCH', headers), [OWN, 'https://app.example.com'])).toBeNull();
  });

  it('lets an older browser, which sends Origin but not Sec-Fetch-Site, through from an allowed origin', () => {
    expect(crossSiteIssue(request('DELETE', { origin: OWN }), [OWN])).toBeNull();
  });

  it.each([
    [{ 'sec-fetch-site': 'cross-site' }, 'a cross-site request without an allowed Origin'],
    [{ 'sec-fetch-site': 'same-site' }, 'a same-site request without an allowed Origin'],
    [{ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, 'the origin https://evil.example'],
    [{ origin: 'null' }, 'the origin null'],
    [{}, 'neither Sec-Fetch-Site nor Origin'],
  ])('refuses a write with %j', (headers, reason) => {
    expect(crossSiteIssue(request('POST', headers), [OWN])).toContain(reason);
  });

  it('lets a client without browser headers sign in, but not a cross-site page', () => {
    expect(crossSiteIssue(request('POST', {}), [OWN], { anonymous: true })).toBeNull();
    const forged = { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' };
    expect(crossSiteIssue(request('POST', forged), [OWN], { anonymous: true })).not.toBeNull();
  });
});

describe('allowedOrigins', () => {
  const req = request('POST', {});

  it('is WEB_ORIGINS when it is set', () => {
    expect(allowedOrigins(req, { webOrigins: ['https://app.example.com'] }, { publicBaseUrl: OWN })).toEqual([
      'https://app.example.com',
    ]);
  });

  it("is PUBLIC_BASE_URL's origin, else the origin the request reached", () => {
    expect(
      allowedOrigins(req, { webOrigins: null }, { publicBaseUrl: 'https://api.example.com/base' }),
    ).toEqual(['https://api.example.com']);
    expect(allowedOrigins(req, { webOrigins: null }, { publicBaseUrl: null })).toEqual([OWN]);
  });
});
