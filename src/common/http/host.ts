/** A Host header is a host name or address and an optional port: nothing that could add a path. */
export const HOST = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
