import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { type AccountPrincipal, isAuthenticated, type Principal } from 'src/modules/auth/auth.types.js';
import { documentTitle } from 'src/modules/chunk-index/document-context.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { toDocumentListItem, toDocumentSummary } from 'src/modules/documents/dto/document.dto.js';

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

/** A document's title: its metadata's `title`, else its filename, else its id. */
export function titleOf(
  metadata: Record<string, unknown>,
  filename: string | null,
  documentId: string,
): string {
  return documentTitle(metadata, filename) ?? documentId;
}

/** Where a document is: its metadata's `url` when it is a web address, else its address in this API. */
export function urlOf(
  base: string,
  metadata: Record<string, unknown>,
  datasetId: string,
  documentId: string,
): string {
  const url = metadata.url;
  if (typeof url === 'string' && /^https?:\/\/\S+$/i.test(url)) return url;
  return `${base}/v1/datasets/${datasetId}/documents/${documentId}`;
}

export function documentSummary(document: DocumentEntity) {
  return {
    ...toDocumentSummary(document),
    title: titleOf(document.metadata, document.filename, document.id),
  };
}

/** A document as lists show it: as REST lists it (its progress, or why it failed), with its title. */
export function documentListItem(document: DocumentEntity) {
  return {
    ...toDocumentListItem(document),
    title: titleOf(document.metadata, document.filename, document.id),
  };
}
