// Search the source tree for the spec's error messages and count the hits per file.
const wanted = ["code mode timeout exceeded", "code mode run is unavailable or expired."];
const report = {};
for (const message of wanted) {
  const { matches } = await tools.grep({ pattern: message, path: "crates", maxResults: 200 });
  const byFile = {};
  for (const m of matches) byFile[m.path] = (byFile[m.path] ?? 0) + 1;
  report[message] = byFile;
}
return report;
