// Prints the envd services as the pinned e2b SDK describes them (the
// descriptors it embeds), one declaration a line, for
// internal/e2b/proto_sdk_test.go to diff against Airlock's .proto files:
//
//   field <pkg.Message> <name> <number> <type> [repeated]
//   enum <pkg.Enum> <NAME> <number>
//   rpc <pkg.Service>/<Method> <Input> <Output> [client-stream] [server-stream]
import fs from "node:fs";
import { createRequire } from "node:module";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

const require = createRequire(import.meta.url);
const src = fs.readFileSync(require.resolve("e2b").replace(/index\.js$/, "index.mjs"), "utf8");
// FieldDescriptorProto.Type numbers to their .proto names.
const scalar = { 1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 8: "bool", 9: "string", 12: "bytes", 13: "uint32", 17: "sint32", 18: "sint64" };
const short = (typeName) => typeName.split(".").pop();
let files = 0;
for (const m of src.matchAll(/fileDesc\("([A-Za-z0-9+/=_-]+)"/g)) {
  const fd = fromBinary(FileDescriptorProtoSchema, Buffer.from(m[1], "base64"));
  if (fd.name !== "process/process.proto" && fd.name !== "filesystem/filesystem.proto") continue;
  files++;
  const messages = (list, prefix) => {
    for (const d of list) {
      const name = `${prefix}.${d.name}`;
      if (d.options?.mapEntry) continue;
      for (const f of d.field) {
        let type = scalar[f.type] ?? short(f.typeName);
        let repeated = f.label === 3;
        const entry = d.nestedType.find((n) => n.name === short(f.typeName) && n.options?.mapEntry);
        if (entry) {
          type = `map<${scalar[entry.field[0].type]},${scalar[entry.field[1].type] ?? short(entry.field[1].typeName)}>`;
          repeated = false;
        }
        console.log(`field ${name} ${f.name} ${f.number} ${type}${repeated ? " repeated" : ""}`);
      }
      messages(d.nestedType, name);
      for (const e of d.enumType) for (const v of e.value) console.log(`enum ${name}.${e.name} ${v.name} ${v.number}`);
    }
  };
  messages(fd.messageType, fd.package);
  for (const e of fd.enumType) for (const v of e.value) console.log(`enum ${fd.package}.${e.name} ${v.name} ${v.number}`);
  for (const s of fd.service)
    for (const r of s.method)
      console.log(`rpc ${fd.package}.${s.name}/${r.name} ${short(r.inputType)} ${short(r.outputType)}${r.clientStreaming ? " client-stream" : ""}${r.serverStreaming ? " server-stream" : ""}`);
}
if (files !== 2) {
  console.error(`found ${files} of the 2 envd descriptors in the e2b SDK`);
  process.exit(1);
}
