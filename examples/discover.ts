// TypeScript: find a tool by search, describe it, and call it with a typed input.
interface ListedEntry {
  name: string;
  kind: "file" | "dir" | "symlink" | "other";
  bytes: number;
}
const [hit] = await tools.search("list directory");
const described = await tools.describe(hit.id);
const listing = (await tools.callValue(hit.id, { path: "docs" })) as { entries: ListedEntry[] };
const docs: string[] = listing.entries.filter((e) => e.name.endsWith(".md")).map((e) => e.name);
return { tool: described.id, input: described.input, docs };
