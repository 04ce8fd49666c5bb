import { isId, newId } from 'src/common/ids/ids.js';

describe('ids', () => {
  it('makes prefixed ids of 22 base62 characters', () => {
    const id = newId('ds');
    expect(id).toMatch(/^ds_[0-9A-Za-z]{22}$/);
  });

  it('never repeats in a large sample', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('doc')));
    expect(ids.size).toBe(10_000);
  });

  it('recognises only ids of the named type', () => {
    const id = newId('ds');
    expect(isId('ds', id)).toBe(true);
    expect(isId('doc', id)).toBe(false);
    expect(isId('ds', `${id}x`)).toBe(false);
    expect(isId('ds', "ds_' OR 1=1 --")).toBe(false);
  });
});
