import { deeperThan, holdsMoreKeys } from 'src/common/validation/json-body.js';

describe('holdsMoreKeys', () => {
  it('counts the keys of every object, however they nest, and not array elements', () => {
    const body = { a: 1, b: { c: 1, d: [{ e: 1 }, { f: 1, g: 1 }] }, h: [1, 2, 3, 4, 5] };
    // a, b, h; c, d; e; f, g.
    expect(holdsMoreKeys(body, 8)).toBe(false);
    expect(holdsMoreKeys(body, 7)).toBe(true);
  });

  it('takes scalars and arrays of scalars as holding no keys', () => {
    expect(holdsMoreKeys(null, 0)).toBe(false);
    expect(holdsMoreKeys('text', 0)).toBe(false);
    expect(
      holdsMoreKeys(
        Array.from({ length: 10_000 }, (_, i) => i),
        0,
      ),
    ).toBe(false);
  });

  it('stops counting at the limit', () => {
    const visited: string[] = [];
    const inner: Record<string, unknown> = { a: { x: 1 }, b: { y: 1 } };
    const spy = new Proxy(inner, {
      get(target, key: string) {
        visited.push(key);
        return target[key];
      },
    });
    expect(holdsMoreKeys({ first: { k1: 1, k2: 2, k3: 3 }, then: spy }, 3)).toBe(true);
    expect(visited).toEqual([]);
  });
});

describe('deeperThan', () => {
  it('tells a value nested beyond the limit, arrays and objects alike', () => {
    expect(deeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(deeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(deeperThan('flat', 0)).toBe(false);
  });
});
