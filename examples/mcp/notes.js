// Two MCP servers in one program (README "MCP servers, both ways"); run with
// codemode exec --mcp-config examples/mcp/servers.json examples/mcp/notes.js
const root = "/tmp/notes";
const [listing] = await Promise.all([
  MCP.fs.listDirectory({ path: root }),
  MCP.memory.createEntities({ entities: [{ name: "note.txt", entityType: "file", observations: ["says hello"] }] }),
]);
const text = await MCP.fs.readTextFile({ path: root + "/note.txt" });
const graph = JSON.parse((await MCP.memory.readGraph({})).content[0].text);
return { files: listing.content[0].text, text: text.content[0].text,
         remembered: graph.entities.map((e) => `${e.name}: ${e.observations.join(", ")}`) };
