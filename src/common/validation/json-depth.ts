/** True when `value` nests objects or arrays more than `max` levels deep; never recurses past `max`. */
export function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  return Object.values(value).some((child) => deeperThan(child, max - 1));
}
