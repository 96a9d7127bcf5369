"""camelCase <-> snake_case the way operator-sdk's ansible-operator converts CR spec keys
(ansible-operator-plugins internal/ansible/paramconv, itself based on iancoleman/strcase), so that
a CR means the same variables to this operator and to ansible-operator."""
import re

_NUMBER_SEQUENCE = re.compile(r"([a-zA-Z])(\d+)([a-zA-Z](\d+))")
# Words kept upper-case in camelCase; ansible-operator iterates a Go map, this order is fixed.
WORD_MAPPING = (("http", "HTTP"), ("url", "URL"), ("ip", "IP"))
_WORDS = dict(WORD_MAPPING)


def _number_boundaries(value):
    return _NUMBER_SEQUENCE.sub(r"\1 \2 \3", value)


def _title(word):
    """Go's cases.Title: the first letter upper-case, everything after it lower-case."""
    for pos, char in enumerate(word):
        if char.isalpha():
            return word[:pos] + char.upper() + word[pos + 1:].lower()
    return word


def to_camel(value):
    """snake_case -> camelCase: 'scc_grants_extra' -> 'sccGrantsExtra', 'proxy_url' -> 'proxyURL'."""
    value = _number_boundaries(value).strip(" ")
    bits = re.split(r"[_ \-]", value)
    out = []
    for index, word in enumerate(bits):
        if word in _WORDS:
            out.append(_WORDS[word])
        elif index:
            out.append(_title(word))
        else:
            out.append(word)
    return "".join(out)


def _isolate_words(value):
    for _lower_case, word in WORD_MAPPING:
        idx = value.find(word)
        if idx < 0:
            continue
        end = idx + len(word)
        if end == len(value):
            value = value[:idx] + "_" + value[idx:]
        elif value[end] == "s":
            if end == len(value) - 1:
                value = value[:idx] + "_" + value[idx:end] + "S"
            elif idx == 0:
                value = value[:end] + "S" + "_" + value[end + 1:]
            else:
                value = value[:idx] + "_" + value[idx:end] + "S" + "_" + value[end + 1:]
        elif idx == 0:
            value = value[:end] + "_" + value[end:]
        else:
            value = value[:idx] + "_" + value[idx:end] + "_" + value[end:]
    return value


def _upper(char):
    return "A" <= char <= "Z"


def _lower(char):
    return "a" <= char <= "z"


def to_snake(value):
    """camelCase -> snake_case, exactly as ansible-operator does: 'sizeK8sBuckets' -> 'size_k8s_buckets',
    'egressIPs' -> 'egress_ips', 'ThisOne' -> '_this_one'."""
    value = _number_boundaries(value).strip(" ")
    if not value:
        return value
    prefix = "_" if _upper(value[0]) else ""
    if value.upper() != value:
        value = _isolate_words(value)
    bits = []
    current = ""
    real = -1
    for index, char in enumerate(value):
        real += 1
        changed = False
        if index + 1 < len(value):
            nxt = value[index + 1]
            changed = (_upper(char) and _lower(nxt)) or (_lower(char) and _upper(nxt))
        if real > 0 and current and current[-1] != "_" and changed:
            if _upper(char):
                bits.append(current.lower())
                current = char
                real = 0
            elif _lower(char):
                bits.append((current + char).lower())
                current = ""
                real = -1
        elif char in " _-":
            bits.append(current.lower())
            current = ""
            real = -1
        else:
            current += char
    bits.append(current.lower())
    joined = "_".join(bits)
    if bits[0] in _WORDS:
        return joined
    return prefix + joined


def map_to_snake(data):
    """Every key of every mapping, recursively: ansible-operator's MapToSnake."""
    if isinstance(data, dict):
        return dict((to_snake(k), map_to_snake(v)) for k, v in data.items())
    if isinstance(data, list):
        return [map_to_snake(v) for v in data]
    return data
