/*
 * policy.c - what a global is: allowed, unknown or dangerous.
 *
 * The allow-list is PyTorch's weights_only=True list (_get_allowed_globals
 * in torch/_weights_only_unpickler.py, 2.x): the rebuild functions, storage
 * and tensor classes, dtypes, qschemes, OrderedDict, Counter, torch.Size,
 * torch.device, Parameter, _codecs.encode and builtins set, bytearray and
 * complex. The deny-list names what can run code or touch the system when a
 * pickle merely refers to it and calls it: os and its kin, the builtins that
 * evaluate, import or reach attributes, loaders of further pickles or code,
 * network and file modules. Everything else is unknown: safe only for a user
 * who trusts the file.
 *
 * A call is judged apart from its callable: REDUCE, INST and OBJ call what
 * the file chose with arguments the file chose, so calling an unknown
 * global is dangerous unless the global is known to build plain data
 * (argparse.Namespace, numpy's array reconstruction). NEWOBJ only makes an
 * instance with cls.__new__, so it stays unknown.
 *
 * Rows are matched in order and the first match wins.
 */
#include "tinspect/findings.h"
#include "tinspect/value.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef enum match_kind {
	EXACT,       /* module.name is the pattern */
	MODULE_TREE, /* the module is the pattern or inside it: "os", "os.path" */
	NAME_PREFIX, /* module is mod, name starts with the pattern's name part */
} match_kind;

typedef struct rule {
	match_kind kind;
	const char *module, *name; /* name: NULL for MODULE_TREE */
	ti_scan_severity severity;
	const char *why;
} rule;

#define ALLOWED "on the weights_only allow-list"
#define RUNS "runs a command or code"
#define IMPORTS "imports or resolves arbitrary names"
#define LOADS "loads another pickle or code"
#define SYSTEM "touches files, processes or the network"
#define TORCHSCRIPT_DATA "builds a TorchScript list or tensor reference (torch.jit.load's own unpickler)"
#define TORCHSCRIPT_CLASS "a TorchScript class: loading runs its compiled TorchScript from the archive's code/, " \
	"not Python; only torch.jit.load reads it"

static const rule rules[] = {
	/* The allow-list. */
	{EXACT, "collections", "OrderedDict", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "collections", "Counter", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch.nn.parameter", "Parameter", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch.serialization", "_get_layout", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch", "Size", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch", "Tensor", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch", "device", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "_codecs", "encode", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "builtins", "bytearray", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "builtins", "set", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "builtins", "complex", TI_SCAN_SAFE, ALLOWED},
	{EXACT, "torch._tensor", "_rebuild_from_type_v2", TI_SCAN_SAFE, ALLOWED},
	{NAME_PREFIX, "torch._utils", "_rebuild_", TI_SCAN_SAFE, ALLOWED},
	{NAME_PREFIX, "torch", "per_tensor_", TI_SCAN_SAFE, ALLOWED},
	{NAME_PREFIX, "torch", "per_channel_", TI_SCAN_SAFE, ALLOWED},
	/*
	 * TorchScript's pickles (torch.jit.save): its unpickler (unpickler.cpp
	 * readGlobal) takes these torch.jit._pickle names as typed lists and
	 * tensor references, and nothing else of torch.jit; a __torch__ class
	 * is compiled from the archive's code/, TorchScript rather than Python.
	 */
	{EXACT, "torch.jit._pickle", "build_intlist", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{EXACT, "torch.jit._pickle", "build_tensorlist", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{EXACT, "torch.jit._pickle", "build_doublelist", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{EXACT, "torch.jit._pickle", "build_boollist", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{EXACT, "torch.jit._pickle", "build_tensor_from_id", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{EXACT, "torch.jit._pickle", "restore_type_tag", TI_SCAN_SAFE, TORCHSCRIPT_DATA},
	{MODULE_TREE, "__torch__", NULL, TI_SCAN_UNKNOWN, TORCHSCRIPT_CLASS},
	/* torch's own ways to load more: a nested load is not weights_only. */
	{EXACT, "torch", "load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "torch.serialization", "load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "torch.serialization", "_load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "torch.serialization", "_legacy_load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "torch.storage", "_load_from_bytes", TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "torch.hub", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "torch.jit", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "torch.package", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "torch.utils.cpp_extension", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "torch._dynamo", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "torch._inductor", NULL, TI_SCAN_DANGEROUS, RUNS},
	/* The operating system, processes, code. */
	{MODULE_TREE, "os", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "posix", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "nt", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "subprocess", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "_posixsubprocess", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "sys", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "runpy", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "importlib", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "pkgutil", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "zipimport", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "pickle", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "_pickle", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "cPickle", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "dill", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "cloudpickle", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "joblib", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "shelve", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "marshal", NULL, TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "types", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "code", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "codeop", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "pdb", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "bdb", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "timeit", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "trace", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "profile", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "cProfile", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "doctest", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "idlelib", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "pty", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "commands", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "popen2", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "platform", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "multiprocessing", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "concurrent", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "asyncio", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "threading", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "_thread", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "signal", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "ctypes", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "_ctypes", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "cffi", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "site", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "ensurepip", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "pip", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "setuptools", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "distutils", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "venv", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "gc", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	{MODULE_TREE, "inspect", NULL, TI_SCAN_DANGEROUS, IMPORTS},
	/* Files and the network. */
	{MODULE_TREE, "shutil", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "tempfile", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "io", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "_io", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "fileinput", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "glob", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "mmap", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "fcntl", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "resource", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "webbrowser", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "socket", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "_socket", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "socketserver", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "ssl", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "select", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "selectors", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "http", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "httplib", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "urllib", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "urllib2", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "ftplib", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "smtplib", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "telnetlib", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "xmlrpc", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "requests", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	{MODULE_TREE, "aiohttp", NULL, TI_SCAN_DANGEROUS, SYSTEM},
	/* Functions that call, or reach, whatever they are given. */
	{EXACT, "operator", "attrgetter", TI_SCAN_DANGEROUS, IMPORTS},
	{EXACT, "operator", "methodcaller", TI_SCAN_DANGEROUS, RUNS},
	{EXACT, "operator", "call", TI_SCAN_DANGEROUS, RUNS},
	{EXACT, "functools", "partial", TI_SCAN_DANGEROUS, RUNS},
	{EXACT, "functools", "reduce", TI_SCAN_DANGEROUS, RUNS},
	{EXACT, "numpy", "load", TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "numpy.testing", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "numpy.f2py", NULL, TI_SCAN_DANGEROUS, RUNS},
	{MODULE_TREE, "numpy.distutils", NULL, TI_SCAN_DANGEROUS, RUNS},
	{EXACT, "numpy.lib.npyio", "load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "pandas", "read_pickle", TI_SCAN_DANGEROUS, LOADS},
	{MODULE_TREE, "pandas.io", NULL, TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "yaml", "load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "yaml", "unsafe_load", TI_SCAN_DANGEROUS, LOADS},
	{EXACT, "copyreg", "_reconstructor", TI_SCAN_UNKNOWN, "makes an instance of a class the file names"},
	{EXACT, "copyreg", "__newobj__", TI_SCAN_UNKNOWN, "makes an instance of a class the file names"},
	{NAME_PREFIX, "copyreg", "extension_", TI_SCAN_SUSPICIOUS, "names a global through copyreg's extension registry"},
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/*
 * Python's builtins (dir(builtins) of CPython 3.11, less the exception
 * classes), sorted by what they can do. Three are on the allow-list
 * (above). Those that evaluate or compile code, import, open files, reach
 * or change attributes, namespaces or frames, wait on the terminal or end
 * the process are dangerous. The rest build or compute a value from their
 * arguments: unknown, since weights_only refuses them, but calling one runs
 * no code the file chose (a function handed to map or sorted is a global
 * of its own, judged as such). A builtin not in the table, from a later
 * Python, is dangerous until it is sorted; *Error, *Exception and *Warning
 * classes are unknown.
 */
#define EVALUATES "a builtin that evaluates or compiles code"
#define IMPORTS_MODULES "a builtin that imports modules"
#define OPENS "a builtin that opens files"
#define REACHES "a builtin that reaches or changes any attribute of any object"
#define NAMESPACES "a builtin that reaches a module's or a frame's namespace"
#define TERMINAL "a builtin that waits on the terminal or starts the debugger"
#define EXITS "a builtin that ends the process"
#define VALUE "a builtin that builds or computes a value from its arguments, off the allow-list"

static const struct builtin_row {
	const char *name;
	ti_scan_severity severity;
	const char *why;
} builtin_table[] = {
	{"bytearray", TI_SCAN_SAFE, ALLOWED},
	{"set", TI_SCAN_SAFE, ALLOWED},
	{"complex", TI_SCAN_SAFE, ALLOWED},
	{"eval", TI_SCAN_DANGEROUS, EVALUATES},
	{"exec", TI_SCAN_DANGEROUS, EVALUATES},
	{"compile", TI_SCAN_DANGEROUS, EVALUATES},
	{"__build_class__", TI_SCAN_DANGEROUS, EVALUATES},
	{"__import__", TI_SCAN_DANGEROUS, IMPORTS_MODULES},
	{"__loader__", TI_SCAN_DANGEROUS, IMPORTS_MODULES},
	{"__spec__", TI_SCAN_DANGEROUS, IMPORTS_MODULES},
	{"help", TI_SCAN_DANGEROUS, IMPORTS_MODULES},
	{"open", TI_SCAN_DANGEROUS, OPENS},
	{"getattr", TI_SCAN_DANGEROUS, REACHES},
	{"setattr", TI_SCAN_DANGEROUS, REACHES},
	{"delattr", TI_SCAN_DANGEROUS, REACHES},
	{"hasattr", TI_SCAN_DANGEROUS, REACHES},
	{"globals", TI_SCAN_DANGEROUS, NAMESPACES},
	{"locals", TI_SCAN_DANGEROUS, NAMESPACES},
	{"vars", TI_SCAN_DANGEROUS, NAMESPACES},
	{"input", TI_SCAN_DANGEROUS, TERMINAL},
	{"breakpoint", TI_SCAN_DANGEROUS, TERMINAL},
	{"license", TI_SCAN_DANGEROUS, TERMINAL},
	{"exit", TI_SCAN_DANGEROUS, EXITS},
	{"quit", TI_SCAN_DANGEROUS, EXITS},
	{"abs", TI_SCAN_UNKNOWN, VALUE}, {"aiter", TI_SCAN_UNKNOWN, VALUE}, {"all", TI_SCAN_UNKNOWN, VALUE},
	{"anext", TI_SCAN_UNKNOWN, VALUE}, {"any", TI_SCAN_UNKNOWN, VALUE}, {"ascii", TI_SCAN_UNKNOWN, VALUE},
	{"bin", TI_SCAN_UNKNOWN, VALUE}, {"bool", TI_SCAN_UNKNOWN, VALUE}, {"bytes", TI_SCAN_UNKNOWN, VALUE},
	{"callable", TI_SCAN_UNKNOWN, VALUE}, {"chr", TI_SCAN_UNKNOWN, VALUE}, {"classmethod", TI_SCAN_UNKNOWN, VALUE},
	{"copyright", TI_SCAN_UNKNOWN, VALUE}, {"credits", TI_SCAN_UNKNOWN, VALUE}, {"dict", TI_SCAN_UNKNOWN, VALUE},
	{"dir", TI_SCAN_UNKNOWN, VALUE}, {"divmod", TI_SCAN_UNKNOWN, VALUE}, {"enumerate", TI_SCAN_UNKNOWN, VALUE},
	{"filter", TI_SCAN_UNKNOWN, VALUE}, {"float", TI_SCAN_UNKNOWN, VALUE}, {"format", TI_SCAN_UNKNOWN, VALUE},
	{"frozenset", TI_SCAN_UNKNOWN, VALUE}, {"hash", TI_SCAN_UNKNOWN, VALUE}, {"hex", TI_SCAN_UNKNOWN, VALUE},
	{"id", TI_SCAN_UNKNOWN, VALUE}, {"int", TI_SCAN_UNKNOWN, VALUE}, {"isinstance", TI_SCAN_UNKNOWN, VALUE},
	{"issubclass", TI_SCAN_UNKNOWN, VALUE}, {"iter", TI_SCAN_UNKNOWN, VALUE}, {"len", TI_SCAN_UNKNOWN, VALUE},
	{"list", TI_SCAN_UNKNOWN, VALUE}, {"map", TI_SCAN_UNKNOWN, VALUE}, {"max", TI_SCAN_UNKNOWN, VALUE},
	{"memoryview", TI_SCAN_UNKNOWN, VALUE}, {"min", TI_SCAN_UNKNOWN, VALUE}, {"next", TI_SCAN_UNKNOWN, VALUE},
	{"object", TI_SCAN_UNKNOWN, VALUE}, {"oct", TI_SCAN_UNKNOWN, VALUE}, {"ord", TI_SCAN_UNKNOWN, VALUE},
	{"pow", TI_SCAN_UNKNOWN, VALUE}, {"print", TI_SCAN_UNKNOWN, VALUE}, {"property", TI_SCAN_UNKNOWN, VALUE},
	{"range", TI_SCAN_UNKNOWN, VALUE}, {"repr", TI_SCAN_UNKNOWN, VALUE}, {"reversed", TI_SCAN_UNKNOWN, VALUE},
	{"round", TI_SCAN_UNKNOWN, VALUE}, {"slice", TI_SCAN_UNKNOWN, VALUE}, {"sorted", TI_SCAN_UNKNOWN, VALUE},
	{"staticmethod", TI_SCAN_UNKNOWN, VALUE}, {"str", TI_SCAN_UNKNOWN, VALUE}, {"sum", TI_SCAN_UNKNOWN, VALUE},
	{"super", TI_SCAN_UNKNOWN, VALUE}, {"tuple", TI_SCAN_UNKNOWN, VALUE}, {"type", TI_SCAN_UNKNOWN, VALUE},
	{"zip", TI_SCAN_UNKNOWN, VALUE}, {"NotImplemented", TI_SCAN_UNKNOWN, VALUE},
	{"Ellipsis", TI_SCAN_UNKNOWN, VALUE}, {"__debug__", TI_SCAN_UNKNOWN, VALUE}, {"__doc__", TI_SCAN_UNKNOWN, VALUE},
	{"__name__", TI_SCAN_UNKNOWN, VALUE}, {"__package__", TI_SCAN_UNKNOWN, VALUE},
};

/* How a builtin is judged, and why: the table, the exception classes, or dangerous when unknown to it. */
static ti_scan_severity classify_builtin(const char *name, const char **why)
{
	for (size_t i = 0; i < sizeof(builtin_table) / sizeof(builtin_table[0]); i++)
		if (!strcmp(builtin_table[i].name, name)) {
			*why = builtin_table[i].why;
			return builtin_table[i].severity;
		}
	if (ends_with(name, "Error") || ends_with(name, "Exception") || ends_with(name, "Warning")) {
		*why = "an exception class, off the allow-list";
		return TI_SCAN_UNKNOWN;
	}
	*why = "a builtin tinspect does not know to be harmless";
	return TI_SCAN_DANGEROUS;
}

/* Classes and functions that only build data from their arguments: calling them is not running code. */
static const char *const data_constructors[] = {
	"argparse.Namespace",
	"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
	"numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
	"numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer",
	"numpy.ndarray", "numpy.dtype",
	"collections.defaultdict", "collections.deque",
	"datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta", "datetime.timezone",
	"decimal.Decimal", "fractions.Fraction", "uuid.UUID",
	"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePath",
	"pathlib.PurePosixPath", "pathlib.PureWindowsPath",
	"copyreg._reconstructor", "copyreg.__newobj__",
};

const char *ti_scan_severity_name(ti_scan_severity s)
{
	static const char *const names[] = {"safe", "unknown", "suspicious", "dangerous"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static bool in_tree(const char *module, const char *tree)
{
	size_t n = strlen(tree);
	return !strncmp(module, tree, n) && (module[n] == '\0' || module[n] == '.');
}

static bool matches(const rule *r, const char *module, const char *name)
{
	switch (r->kind) {
	case EXACT:
		return !strcmp(module, r->module) && !strcmp(name, r->name);
	case MODULE_TREE:
		return in_tree(module, r->module);
	case NAME_PREFIX:
		return !strcmp(module, r->module) && !strncmp(name, r->name, strlen(r->name));
	}
	return false;
}

static bool listed(const char *const *list, size_t n, const char *value)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], value))
			return true;
	return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The dtypes torch pickles as torch.<name> (torch/_weights_only_unpickler.py, 2.x). */
static const char *const dtypes[] = {
	"float32", "float", "float64", "double", "float16", "half", "bfloat16", "complex32", "chalf",
	"complex64", "cfloat", "complex128", "cdouble", "uint8", "int8", "int16", "short", "int32", "int",
	"int64", "long", "bool", "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "uint16", "uint32",
	"uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
	"float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "uint1", "uint2", "uint3",
	"uint4", "uint5", "uint6", "uint7", "int1", "int2", "int3", "int4", "int5", "int6", "int7",
};

/* torch._storage_classes and torch._tensor_classes, CPU and CUDA: "FloatStorage", "cuda.HalfTensor". */
static const char *const element_types[] = {
	"Double", "Float", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool",
	"ComplexDouble", "ComplexFloat", "QUInt8", "QInt8", "QInt32", "QUInt4x2", "QUInt2x4",
};

static bool torch_class(const char *module, const char *name)
{
	bool cuda = !strcmp(module, "torch.cuda");
	if (!strcmp(module, "torch.storage") || !strcmp(module, "torch"))
		if (!strcmp(name, "UntypedStorage") || !strcmp(name, "TypedStorage") || !strcmp(name, "_UntypedStorage"))
			return true;
	if (!cuda && strcmp(module, "torch"))
		return false;
	const char *suffix = ends_with(name, "Storage") ? "Storage" : ends_with(name, "Tensor") ? "Tensor" : NULL;
	if (!suffix)
		return false;
	size_t n = strlen(name) - strlen(suffix);
	for (size_t i = 0; i < COUNT(element_types); i++)
		if (strlen(element_types[i]) == n && !strncmp(name, element_types[i], n))
			return !(suffix[0] == 'T' && element_types[i][0] == 'Q'); /* no QInt8Tensor class */
	return false;
}

/*
 * Python resolves a dotted name attribute by attribute (protocol 4 and up):
 * torch + "serialization.os.system" is os.system. A step through a module
 * on the deny-list, or through a dunder (__globals__, __builtins__,
 * __subclasses__), reaches what the module name alone hides.
 */
static bool dotted_reach(const char *name, const char **why)
{
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		char part[128];
		if (n >= sizeof(part))
			n = sizeof(part) - 1;
		memcpy(part, p, n);
		part[n] = '\0';
		if (n >= 4 && !strncmp(part, "__", 2) && ends_with(part, "__")) {
			*why = "reaches a dunder attribute through a dotted name";
			return true;
		}
		for (size_t i = 0; i < COUNT(rules); i++)
			if (rules[i].kind == MODULE_TREE && rules[i].severity == TI_SCAN_DANGEROUS && !strcmp(part, rules[i].module)) {
				*why = "reaches a dangerous module through a dotted name";
				return true;
			}
		if (!dot)
			break;
		p = dot + 1;
	}
	return false;
}

ti_scan_severity ti_scan_classify_global(const char *module, const char *name, const char **why)
{
	const char *reason = "not on the weights_only allow-list";
	ti_scan_severity s = TI_SCAN_UNKNOWN;
	if (!module || !name) {
		s = TI_SCAN_DANGEROUS;
		reason = "a global whose name is not known until load time";
	} else if (strchr(name, '.') && dotted_reach(name, &reason)) {
		s = TI_SCAN_DANGEROUS;
	} else if (!strcmp(module, "builtins")) {
		s = classify_builtin(name, &reason);
	} else if ((!strcmp(module, "torch") && listed(dtypes, COUNT(dtypes), name)) || torch_class(module, name)) {
		s = TI_SCAN_SAFE;
		reason = ALLOWED;
	} else {
		for (size_t i = 0; i < COUNT(rules); i++)
			if (matches(&rules[i], module, name)) {
				s = rules[i].severity;
				reason = rules[i].why;
				break;
			}
	}
	if (why)
		*why = reason;
	return s;
}

static bool is_data_constructor(const char *module, const char *name)
{
	char full[256];
	int n = snprintf(full, sizeof(full), "%s.%s", module, name);
	if (n < 0 || (size_t)n >= sizeof(full))
		return false;
	if (!strcmp(module, "builtins")) { /* unknown builtins build or compute values: see the table */
		const char *why;
		return classify_builtin(name, &why) == TI_SCAN_UNKNOWN;
	}
	/* numpy 2's dtype classes: numpy.dtypes.Float32DType */
	if (!strcmp(module, "numpy.dtypes") && ends_with(name, "DType") && !strchr(name, '.'))
		return true;
	return listed(data_constructors, COUNT(data_constructors), full);
}

ti_scan_severity ti_scan_classify_call(const char *module, const char *name, const char *opcode,
                                       const char **why)
{
	ti_scan_severity s = ti_scan_classify_global(module, name, why);
	if (s != TI_SCAN_UNKNOWN)
		return s;
	if (in_tree(module, "__torch__")) /* REDUCE and BUILD both hand the state to the class (unpickler.cpp) */
		return s;
	bool newobj = opcode && !strncmp(opcode, "NEWOBJ", 6);
	if (newobj || is_data_constructor(module, name)) {
		if (why)
			*why = newobj ? "makes an instance of a class outside the allow-list" : "builds data, outside the allow-list";
		return TI_SCAN_UNKNOWN;
	}
	if (why)
		*why = "calls a function the file chose, outside the allow-list";
	return TI_SCAN_DANGEROUS;
}

/*
 * An Enum member, pickled by value: REDUCE of its class with one constant,
 * IntervalStrategy('steps') (Enum.__reduce_ex__ returns (cls, (value,))).
 * Calling it only looks a member up; but without importing the class
 * nothing proves it is an Enum, and a class called with one constant can
 * do anything its constructor does: logging.FileHandler('x') creates a
 * file, imaplib.IMAP4('host') connects. So the pattern is taken narrowly,
 * and as unknown (it needs the class's package, whose import runs its
 * code), never as safe: a REDUCE, of exactly one str or int, of a global
 * the lists above do not already judge, named like a class (CapWords), in
 * a module path of plain identifiers with no dunder, outside Python's
 * standard library (Enums of no checkpoint's, and home of the constructors
 * above) and outside the third-party packages known to open files or
 * connections on construction (below). Its result must stay a value:
 * findings.c calls BUILD on it or a call of it dangerous.
 */
static const char *const standard_library[] = { /* sys.stdlib_module_names of CPython 3.11, public ones */
	"abc", "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio", "asyncore", "atexit",
	"audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile", "calendar", "cgi", "cgitb",
	"chunk", "cmath", "cmd", "code", "codecs", "codeop", "collections", "colorsys", "compileall", "concurrent",
	"configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses",
	"dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest", "email", "encodings",
	"ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch", "fractions",
	"ftplib", "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "grp",
	"gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr", "imp", "importlib",
	"inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache", "locale", "logging",
	"lzma", "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt",
	"multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers", "opcode", "operator",
	"optparse", "os", "ossaudiodev", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform",
	"plistlib", "poplib", "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile",
	"pyclbr", "pydoc", "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "reprlib",
	"resource", "rlcompleter", "runpy", "sched", "secrets", "select", "selectors", "shelve", "shlex", "shutil",
	"signal", "site", "smtpd", "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile",
	"sre_constants", "sre_parse", "ssl", "stat", "statistics", "string", "stringprep", "struct", "subprocess",
	"sunau", "symtable", "sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile",
	"termios", "textwrap", "this", "threading", "time", "timeit", "tkinter", "token", "tokenize", "tomllib",
	"trace", "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types", "typing", "unicodedata",
	"unittest", "urllib", "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "winreg",
	"winsound", "wsgiref", "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
};

static const char *const io_packages[] = { /* classes that open files or connections from one string */
	"pandas", "h5py", "tables", "sqlalchemy", "zmq", "paramiko", "fabric", "boto3", "botocore", "fsspec",
	"smart_open", "urllib3", "httpx", "tornado", "twisted", "IPython", "jupyter_client", "docker", "git",
	"wandb", "mlflow", "redis", "pymongo", "psycopg2", "serial",
};

static bool plain_identifier(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9') || (n >= 2 && s[0] == '_' && s[1] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Whether module.name may be an Enum class by all its names show (the rules above). */
static bool enum_class(const char *module, const char *name, char *package, size_t size)
{
	if (!module || !name)
		return false;
	if (ti_scan_classify_global(module, name, NULL) != TI_SCAN_UNKNOWN || is_data_constructor(module, name) ||
	    in_tree(module, "__torch__"))
		return false;
	size_t nl = strlen(name);
	bool lower = false;
	for (size_t i = 0; i < nl; i++)
		lower |= name[i] >= 'a' && name[i] <= 'z';
	if (!plain_identifier(name, nl) || name[0] < 'A' || name[0] > 'Z' || !lower)
		return false;
	char top[128];
	const char *p = module;
	for (bool first = true;; first = false) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (!plain_identifier(p, n))
			return false;
		if (first) {
			if (n >= sizeof(top))
				return false;
			memcpy(top, p, n);
			top[n] = '\0';
		}
		if (!dot)
			break;
		p = dot + 1;
	}
	if (listed(standard_library, COUNT(standard_library), top) || listed(io_packages, COUNT(io_packages), top))
		return false;
	if (package && size)
		snprintf(package, size, "%s", top);
	return true;
}

bool ti_scan_is_enum_lookup(const char *module, const char *name, const char *opcode, const ti_value *args,
                            char *package, size_t size)
{
	if (!module || !name || !opcode || strcmp(opcode, "REDUCE") || !args || args->kind != TI_TUPLE ||
	    args->as.seq.count != 1)
		return false;
	const ti_value *a = args->as.seq.items[0];
	if (a->kind != TI_STR && a->kind != TI_INT)
		return false;
	return enum_class(module, name, package, size);
}

/*
 * Python 3.11 and later pickle an Enum member by name: Enum.__reduce_ex__
 * returns (getattr, (cls, member_name)), so the file holds REDUCE of
 * builtins.getattr with a class global and a str. Taken as narrowly as the
 * by-value form: the class passes the same test, the name is a plain
 * identifier that starts with no underscore (no dunder, nothing private),
 * and the result stays a value (findings.c: calling it or BUILD on it is
 * dangerous). Every other call of getattr is dangerous.
 */
bool ti_scan_is_enum_by_name(const char *module, const char *name, const char *opcode, const ti_value *args,
                             char *package, size_t size)
{
	if (!module || !name || strcmp(module, "builtins") || strcmp(name, "getattr") || !opcode ||
	    strcmp(opcode, "REDUCE") || !args || args->kind != TI_TUPLE || args->as.seq.count != 2)
		return false;
	const ti_value *cls = args->as.seq.items[0], *member = args->as.seq.items[1];
	if (cls->kind != TI_GLOBAL || member->kind != TI_STR || member->as.bytes.size == 0 || member->as.bytes.data[0] == '_' ||
	    !plain_identifier(member->as.bytes.data, member->as.bytes.size))
		return false;
	return enum_class(cls->as.global->module, cls->as.global->name, package, size);
}
