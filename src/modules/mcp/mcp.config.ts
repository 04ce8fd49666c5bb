import { type ConfigOf, origins, section } from 'src/config/define.js';

export const mcpSection = section('MCP_CONFIG', {
  title: 'MCP',
  variables: {
    /** Browser origins allowed to call the MCP endpoint besides the service's own (DNS-rebinding defence). */
    origins: origins('MCP_ORIGINS', {
      defaultText: 'none',
      description:
        "comma-separated browser origins allowed to call the MCP endpoints besides the service's own, such " +
        "as a browser-based MCP client's (docs/mcp.md)",
    }),
  },
  derive: ({ origins }) => ({ origins: origins ?? [] }),
});

export const MCP_CONFIG = mcpSection.token;
export type McpConfig = ConfigOf<typeof mcpSection>;
