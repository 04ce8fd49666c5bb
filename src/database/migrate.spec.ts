import { compareVersions } from 'src/database/migrate.js';

describe('compareVersions', () => {
  it.each([
    ['0.8.0', '0.8.0', 0],
    ['0.8.1', '0.8.0', 1],
    ['0.10.0', '0.8.0', 1],
    ['0.7.4', '0.8.0', -1],
    ['1.0', '0.8.0', 1],
  ])('compares %s with %s', (a, b, sign) => {
    expect(Math.sign(compareVersions(a, b))).toBe(sign);
  });
});
