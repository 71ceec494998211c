// Read this repository's README.md through the `read` tool and return its first line.
const file = await tools.callValue("openclaw:core:read", { path: "README.md" });
return file.content.split("\n")[0];
