/* The format's sniff of one line, from its bytes (included by _scan.c): formats.line_scores, which calls each format's
 * ``sniff`` on the line orjson parsed, without parsing it into objects. The first lines of every file are sniffed to
 * tell its format; parsing each (most of them a Claude Code file's long progress lines) cost more than the rest of a
 * small file's scan.
 *
 * ``sniff(line, types, roles)``: the line is checked whole, as the scan checks a line (``valid``), and must be one
 * object; the words the sniffs compare are looked up in ``types`` (the top-level ``type``) and ``roles`` (the
 * top-level ``role``, and the ``role`` of a top-level ``message`` object), dicts of UTF-8 bytes to bits (SN_*, as
 * formats.SNIFF_BITS). Returns (pi, claude, codex, messages) as the four sniffs score the line, or None where the
 * Python must look: the line is no object or not valid as the scan reads it, or a key or one of those words is
 * written with an escape. A key written twice counts as orjson reads it: the last value. */

enum {
    SN_CLAUDE_UA = 1, SN_CLAUDE_KNOWN = 2, SN_PI_SESSION = 4, SN_PI_ENTRY = 8, SN_PI_MESSAGE = 16, SN_CODEX_LINE = 32,
    SN_CODEX_STRONG = 64,  /* (type bits) */
    SN_PI_ROLE = 1, SN_MESSAGES_ROLE = 2,  /* (role bits) */
};

enum { SK_TYPE, SK_UUID, SK_SESSION, SK_LEAF, SK_MESSAGE_ID, SK_MESSAGE, SK_PAYLOAD, SK_ROLE, SK_CONTENT, SK_OTHER };

static int sniff_key(cp s, Py_ssize_t n) {
    static const char *names[] = {"type", "uuid", "sessionId", "leafUuid", "messageId", "message", "payload", "role",
                                  "content"};
    static const Py_ssize_t lens[] = {4, 4, 9, 8, 9, 7, 7, 4, 7};  /* (a strlen each, for every key, was 2% of a small file) */
    for (int k = 0; k < SK_OTHER; k++)
        if (lens[k] == n && *s == (unsigned char)names[k][0] && memcmp(s, names[k], n) == 0) return k;
    return SK_OTHER;
}

/* the bits ``words`` gives the string at s (n bytes, no escape): 0 when it gives none; -1 on error */
static long sniff_bits(PyObject *words, cp s, Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize((const char *)s, n);
    if (!b) return -1;
    PyObject *v = PyDict_GetItemWithError(words, b);
    Py_DECREF(b);
    if (!v) return PyErr_Occurred() ? -1 : 0;
    return PyLong_AsLong(v);
}

/* what a line's sniff gathers as its members are read */
typedef struct {
    PyObject *types, *roles;
    int seen[SK_OTHER], type_str, message_obj, payload_obj;
    long type_bits, role_bits, message_role;
} Sniff;

/* a string value at p (its quote): its bits in ``words`` (*bits), p past it; NULL when invalid, written with an
 * escape, or on error (set) */
static cp sniff_word(cp p, cp end, PyObject *words, long *bits) {
    int esc;
    cp s = p + 1, q = scan_string(s, end, &esc);
    if (!q || esc) return NULL;
    *bits = sniff_bits(words, s, q - 1 - s);
    return *bits < 0 ? NULL : q;
}

typedef cp (*Member)(Sniff *s, cp key, Py_ssize_t n, cp v, cp end, int depth);

/* the object at p (its '{', at ``depth``): each member's key (written without an escape) and value handed to
 * ``member``, which returns the position past the value; the position past the object, or NULL (declined, or an error
 * set) */
static cp sniff_object(Sniff *s, cp p, cp end, int depth, Member member) {
    int esc;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        if (p >= end || *p != '"') return NULL;
        cp key = p + 1, q = scan_string(key, end, &esc);
        if (!q || esc) return NULL;
        p = skip_ws(q, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        if (p >= end || !(p = member(s, key, q - 1 - key, p, end, depth + 1))) return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ',') { p = skip_ws(p + 1, end); continue; }
        if (p < end && *p == '}') return p + 1;
        return NULL;
    }
}

/* a member of a top-level message object: its role (the last "role" key's, as orjson reads a key written twice) */
static cp message_member(Sniff *s, cp key, Py_ssize_t n, cp v, cp end, int depth) {
    if (n != 4 || memcmp(key, "role", 4) != 0) return scan_value(v, end, depth);
    s->message_role = 0;
    return *v == '"' ? sniff_word(v, end, s->roles, &s->message_role) : scan_value(v, end, depth);
}

/* a member of the line's object */
static cp top_member(Sniff *s, cp key, Py_ssize_t n, cp v, cp end, int depth) {
    int k = sniff_key(key, n);
    if (k == SK_OTHER) return scan_value(v, end, depth);
    s->seen[k] = 1;
    if (k == SK_TYPE) { s->type_str = 0; s->type_bits = 0; }  /* (a key written twice: its last value counts) */
    else if (k == SK_ROLE) s->role_bits = 0;
    else if (k == SK_MESSAGE) { s->message_obj = 0; s->message_role = 0; }
    else if (k == SK_PAYLOAD) s->payload_obj = *v == '{';
    if (k == SK_TYPE && *v == '"') {
        s->type_str = 1;
        return sniff_word(v, end, s->types, &s->type_bits);
    }
    if (k == SK_ROLE && *v == '"') return sniff_word(v, end, s->roles, &s->role_bits);
    if (k == SK_MESSAGE && *v == '{') {
        s->message_obj = 1;
        return sniff_object(s, v, end, depth, message_member);  /* (depth 1: the line's own member) */
    }
    return scan_value(v, end, depth);
}

/* the sniffs' scores of the line from p to end: a new reference to (pi, claude, codex, messages), or to None (the Python
 * must look); NULL with an error set */
static PyObject *sniff_scores(cp p, cp end, PyObject *types, PyObject *roles) {
    Sniff sn = {.types = types, .roles = roles};
    int *seen = sn.seen;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') Py_RETURN_NONE;
    p = sniff_object(&sn, p, end, 0, top_member);
    if (!p) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (skip_ws(p, end) != end) Py_RETURN_NONE;
    int type_str = sn.type_str, message_obj = sn.message_obj, payload_obj = sn.payload_obj;
    long type_bits = sn.type_bits, role_bits = sn.role_bits, message_role = sn.message_role;
    int ids = seen[SK_UUID] || seen[SK_SESSION];
    int claude = !type_str ? 0 : (type_bits & SN_CLAUDE_UA) && message_obj && ids ? 5
        : (type_bits & SN_CLAUDE_KNOWN) && (ids || seen[SK_LEAF] || seen[SK_MESSAGE_ID]) ? 3 : 0;
    int pi = !type_str ? 0 : (type_bits & SN_PI_SESSION) ? 10
        : !(type_bits & SN_PI_ENTRY) ? 0 : !(type_bits & SN_PI_MESSAGE) ? 3 : message_obj && (message_role & SN_PI_ROLE) ? 3 : 0;
    int codex = type_str && (type_bits & SN_CODEX_LINE) && payload_obj ? ((type_bits & SN_CODEX_STRONG) ? 6 : 4) : 0;
    int messages = !seen[SK_TYPE] && (role_bits & SN_MESSAGES_ROLE) && seen[SK_CONTENT] ? 4 : 0;
    return Py_BuildValue("(iiii)", pi, claude, codex, messages);
}

static PyObject *sniff(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "sniff(line: bytes, types: dict, roles: dict)");
        return NULL;
    }
    cp p = (cp)PyBytes_AS_STRING(args[0]);
    return sniff_scores(p, p + PyBytes_GET_SIZE(args[0]), args[1], args[2]);
}
