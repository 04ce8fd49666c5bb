import { addressIssue, checkedAddress } from 'src/modules/webhooks/delivery/safe-address.js';

const publicOnly = { allowLoopback: false, allowPrivate: false };

describe('addressIssue', () => {
  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111'])(
    'lets the public address %s through',
    (address) => {
      expect(addressIssue(address, publicOnly)).toBeNull();
    },
  );

  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['fc00::1', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['::ffff:127.0.0.1', 'IPv4-mapped'],
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    ['fec0::1', 'reserved'],
    ['::7f00:1', 'reserved'],
    ['64:ff9b:1::1', 'reserved'],
  ])('refuses %s (%s)', (address, kind) => {
    expect(addressIssue(address, publicOnly)).toContain(kind);
  });

  it('lets loopback through in development, and the private ranges when allowed', () => {
    expect(addressIssue('127.0.0.1', { allowLoopback: true, allowPrivate: false })).toBeNull();
    expect(addressIssue('10.0.0.1', { allowLoopback: true, allowPrivate: false })).toContain('private');
    expect(addressIssue('10.0.0.1', { allowLoopback: false, allowPrivate: true })).toBeNull();
    expect(addressIssue('::ffff:10.0.0.1', { allowLoopback: false, allowPrivate: true })).toContain(
      'IPv4-mapped',
    );
  });
});

describe('checkedAddress', () => {
  it('resolves a name and refuses it when it resolves to a loopback address', async () => {
    expect(await checkedAddress('localhost', publicOnly)).toEqual({
      issue: expect.stringContaining('localhost resolves to'),
    });
    expect(await checkedAddress('localhost', { allowLoopback: true, allowPrivate: false })).toMatchObject({
      address: expect.stringMatching(/^(127\.0\.0\.1|::1)$/),
    });
    expect(await checkedAddress('[::1]', { allowLoopback: true, allowPrivate: false })).toEqual({
      address: '::1',
      family: 6,
    });
  });
});
