import { compileFilters } from 'src/modules/search/filters.js';

describe('compileFilters', () => {
  it('binds a $in or $nin list as one array of its containments, whatever its length', () => {
    const values = Array.from({ length: 100 }, (_, i) => `v${i}`);
    const compiled = compileFilters({ 'a.b': { $in: values, $nin: [1, 2] } }, 1);
    expect(compiled.params).toHaveLength(2);
    expect(compiled.sql.match(/@>/g)).toHaveLength(2);
    const [inForms, ninForms] = compiled.params as string[][];
    // Each value, at the key of that dotted name and at the nested path, alone and in an array.
    expect(inForms).toHaveLength(400);
    expect(inForms.slice(0, 4).map((form) => JSON.parse(form) as unknown)).toEqual([
      { 'a.b': 'v0' },
      { 'a.b': ['v0'] },
      { a: { b: 'v0' } },
      { a: { b: ['v0'] } },
    ]);
    expect(ninForms).toHaveLength(8);
    expect(compiled.sql).toMatch(
      /^\(\(\(d\.metadata @> ANY \(\$1::jsonb\[\]\)\) AND NOT \(d\.metadata @> ANY \(\$2::jsonb\[\]\)\)\)\)$/,
    );
  });

  it('tests equality with a containment clause for each form, which the GIN index serves', () => {
    const compiled = compileFilters({ category: 'guide' }, 3);
    expect(compiled.sql).toBe('((d.metadata @> $3::jsonb OR d.metadata @> $4::jsonb))');
    expect(compiled.params).toEqual(['{"category":"guide"}', '{"category":["guide"]}']);
  });
});
