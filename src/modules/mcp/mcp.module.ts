import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { DocumentStoreModule } from 'src/modules/documents/document-store.module.js';
import { DocumentsModule } from 'src/modules/documents/documents.module.js';
import { McpController } from 'src/modules/mcp/mcp.controller.js';
import { McpToolsService } from 'src/modules/mcp/mcp-tools.service.js';
import { McpService } from 'src/modules/mcp/mcp.service.js';
import { SearchModule } from 'src/modules/search/search.module.js';

/** The remote MCP server: the service's search and documents as tools for agents (docs/mcp.md). */
@Module({
  imports: [ChunkIndexModule, DatasetsModule, DocumentsModule, DocumentStoreModule, SearchModule],
  controllers: [McpController],
  providers: [McpService, McpToolsService],
})
export class McpModule {}
