import { parseFilters, renderFilter } from 'src/modules/search/filters.js';

const rendered = (filters: unknown, firstParam: number) => renderFilter(parseFilters(filters), firstParam);

describe('filters', () => {
  it('binds a $in or $nin list as one array, whatever its length', () => {
    const values = Array.from({ length: 100 }, (_, i) => `v${i}`);
    const compiled = rendered({ 'a.b': { $in: values, $nin: [1, 2] } }, 1);
    const arrays = compiled.params.filter((param) => Array.isArray(param));
    expect(arrays).toEqual([values.map((value) => JSON.stringify(value)), ['1', '2']]);
    // The rest are the steps of the field's two paths: the key `a.b`, and `a` then `b`.
    expect(
      compiled.params.filter((param) => !Array.isArray(param)).every((step) => typeof step === 'string'),
    ).toBe(true);
    expect(compiled.sql.match(/= ANY \(\$\d+::jsonb\[\]\)/g)).toHaveLength(8);
    expect(compiled.sql).not.toContain('@>');
  });

  it('tests equality with a containment clause for each form, which the GIN index serves', () => {
    const compiled = rendered({ category: 'guide' }, 3);
    expect(compiled.sql).toBe('((d.metadata @> $3::jsonb OR d.metadata @> $4::jsonb))');
    expect(compiled.params).toEqual(['{"category":"guide"}', '{"category":["guide"]}']);
  });

  it('renders one parsed filter at any parameter offset, with the same parameters', () => {
    const parsed = parseFilters({ $or: [{ lang: { $in: ['en', 'fr'] } }, { year: { $gte: 2020 } }] });
    const first = renderFilter(parsed, 1);
    const later = renderFilter(parsed, 6);
    expect(later.params).toEqual(first.params);
    expect(later.sql).toBe(first.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + 5}`));
    expect(parsed.fields).toBe(2);
  });
});
