// List the workspace crates and read each Cargo.toml in parallel (independent calls only),
// then return every crate's one-line description.
const { entries } = await tools.list({ path: "crates" });
const crates = entries.filter((e) => e.kind === "dir").map((e) => e.name);
const manifests = await Promise.all(
  crates.map((name) => tools.read({ path: `crates/${name}/Cargo.toml` }).catch(() => null)),
);
const out = {};
crates.forEach((name, i) => {
  const text = manifests[i] ? manifests[i].content : "";
  const m = text.match(/^description\s*=\s*"(.*)"/m);
  out[name] = m ? m[1] : "(no description)";
});
text(`${crates.length} crates`);
return out;
