import type { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';

/** A route's handler, whose metadata holds what the route declares, and its name for messages. */
export interface RouteHandler {
  name: string;
  handler: (...args: never[]) => unknown;
}

/** Every route handler of the application's controllers, for the guards' checks at boot. */
export function routeHandlers(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  reflector: Reflector,
): RouteHandler[] {
  const handlers: RouteHandler[] = [];
  for (const wrapper of discovery.getControllers()) {
    const instance = wrapper.instance as object | undefined;
    const prototype = instance ? (Object.getPrototypeOf(instance) as object) : null;
    if (!prototype) continue;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const handler = (prototype as Record<string, unknown>)[method];
      if (typeof handler !== 'function' || reflector.get('path', handler) === undefined) continue;
      handlers.push({ name: `${wrapper.name}.${method}`, handler: handler as RouteHandler['handler'] });
    }
  }
  return handlers;
}
