import type { Request } from 'express';

/** What this code reads of the Express router's layers: a route's path matcher and its methods. */
interface RouteLayer {
  route?: { methods: Record<string, boolean | undefined> };
  match(path: string): unknown;
}

/** The order the Allow header lists methods in; any other a route takes comes after, by name. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The methods the app's routes take at the request's path, from the router Nest registered them on,
 * so that the answer follows the routes as they are: HEAD wherever GET is (Express answers it with the
 * GET route). Empty when no route matches the path, or when one takes any method (`route.all`;
 * Express's `app.all` lists each method instead).
 */
export function allowedMethods(request: Request): string[] {
  // Express's types describe the router of Express 4, whose layers had no `match`.
  const stack = request.app.router.stack as unknown as RouteLayer[];
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || !matches(layer, request.path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (!on) continue;
      if (method === '_all') return [];
      methods.add(method.toUpperCase());
    }
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function matches(layer: RouteLayer, path: string): boolean {
  try {
    return Boolean(layer.match(path));
  } catch {
    // A parameter that does not decode (`%E0%A4%A`): the request never got that far.
    return false;
  }
}

function rank(method: string): number {
  const index = ORDER.indexOf(method);
  return index < 0 ? ORDER.length : index;
}
