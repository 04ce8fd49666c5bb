/**
 * A stand-in for a dependency where only the listed members exist: touching anything else fails the
 * test at once, so that a unit spec cannot pass while calling something it did not mean to.
 */
export function strictMock<T extends object>(members: Partial<T>, name = 'mock'): T {
  return new Proxy(members, {
    get(target, property) {
      if (property in target) return target[property as keyof typeof target];
      if (property === 'then' || typeof property === 'symbol') return undefined;
      throw new Error(`${name}.${String(property)} was called but not mocked`);
    },
  }) as T;
}
