// dump.mjs FILE... - what @huggingface/gguf reads from each GGUF file, as one
// JSON document per line: version, the data section's offset, every tensor
// (name, ne as the file lists it, ggml type name and number, offset) and every
// metadata value (bigints as decimal strings, arrays in full).
import { gguf, GGMLQuantizationType } from "@huggingface/gguf";

const plain = (v) =>
	typeof v === "bigint" ? v.toString() : Array.isArray(v) ? v.map(plain) : v;

for (const file of process.argv.slice(2)) {
	const r = await gguf(file, { allowLocalFile: true });
	const metadata = {};
	for (const [k, v] of Object.entries(r.metadata)) metadata[k] = plain(v);
	console.log(JSON.stringify({
		file,
		tensorDataOffset: r.tensorDataOffset.toString(),
		metadata,
		tensors: r.tensorInfos.map((t) => ({
			name: t.name,
			ne: t.shape.map((d) => d.toString()),
			type: GGMLQuantizationType[t.dtype],
			type_id: t.dtype,
			offset: t.offset.toString(),
		})),
	}));
}
