import { type DynamicModule, RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';

/** One route the application serves, as its controller declares it. */
export interface Route {
  method: string;
  /** Express's pattern, parameters as `:name`. */
  path: string;
  controller: string;
  /** The handler: its metadata (access rule, rate limit) is the route's. */
  handler: (...args: never[]) => unknown;
}

type ModuleRef = Type | DynamicModule | Promise<DynamicModule> | { forwardRef: () => Type };

/**
 * Every route of the controllers in the module graph under `root`, read from Nest's metadata without
 * building the application (no connection is made), in the order of the graph. For listing the
 * routes (`node dist/cli.js routes`) and for the tests that send something to each of them.
 */
export async function routeTable(root: Type | DynamicModule): Promise<Route[]> {
  const routes: Route[] = [];
  const seen = new Set<unknown>();
  const visit = async (reference: ModuleRef): Promise<void> => {
    const resolved = await reference;
    const module = 'forwardRef' in resolved ? resolved.forwardRef() : resolved;
    if (seen.has(module)) return;
    seen.add(module);
    const type = 'module' in module ? module.module : module;
    const dynamic = 'module' in module ? module : undefined;
    const controllers = [
      ...((Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, type) as Type[] | undefined) ?? []),
      ...(dynamic?.controllers ?? []),
    ];
    for (const controller of controllers) routes.push(...routesOf(controller));
    const imports = [
      ...((Reflect.getMetadata(MODULE_METADATA.IMPORTS, type) as ModuleRef[] | undefined) ?? []),
      ...((dynamic?.imports ?? []) as ModuleRef[]),
    ];
    for (const imported of imports) await visit(imported);
  };
  await visit(root);
  return routes;
}

function routesOf(controller: Type): Route[] {
  const prefixes = [
    (Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined) ?? '',
  ].flat();
  const prototype = controller.prototype as Record<string, unknown>;
  return Object.getOwnPropertyNames(prototype).flatMap((name) => {
    const handler = prototype[name];
    if (typeof handler !== 'function' || name === 'constructor') return [];
    const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
    if (paths === undefined) return [];
    const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
    return prefixes.flatMap((prefix) =>
      [paths].flat().map((path) => ({
        method,
        path: joinPath(prefix, path),
        controller: controller.name,
        handler: handler as Route['handler'],
      })),
    );
  });
}

function joinPath(prefix: string, path: string): string {
  const joined = `/${[prefix, path]
    .map((part) => part.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/')}`;
  return joined;
}
