import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { type AccountPrincipal, isAuthenticated, type Principal } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';

/** What one request to an MCP endpoint is served with. */
export interface McpContext {
  caller: Principal;
  /** The dataset of a per-dataset endpoint; null at the general endpoint. */
  dataset: DatasetEntity | null;
  /** Where the service is reached, for the links in results. */
  base: string;
  request: Request;
}

/** The general endpoint needs an account's credential (its route says so); this makes it explicit. */
export function accountOf(caller: Principal): AccountPrincipal {
  if (!isAuthenticated(caller)) throw CommonErrors.authenticationRequired();
  return caller;
}
