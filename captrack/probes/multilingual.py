"""C5c probe: the same items asked in English, French, Spanish and German (templates by the captrack team).

Like C5a, each doc carries every language as one form (with its options in that language) and is
scored on accuracy across languages and on giving the same answer in all of them.
"""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator
from captrack.probes.forms import forms_doc
from captrack.probes.world import plan

__all__ = ["CAPITALS", "LANGUAGES", "WEEKDAYS_BY_LANGUAGE"]

LANGUAGES = ("en", "fr", "es", "de")
_ANSWER = {"en": "Answer:", "fr": "Réponse :", "es": "Respuesta:", "de": "Antwort:"}
_TEMPLATES = {
    "capital": {
        "en": "What is the capital of {0}?", "fr": "Quelle est la capitale {0} ?",
        "es": "¿Cuál es la capital de {0}?", "de": "Was ist die Hauptstadt von {0}?",
    },
    "arithmetic": {
        "en": "What is {0} plus {1}?", "fr": "Combien font {0} plus {1} ?",
        "es": "¿Cuánto es {0} más {1}?", "de": "Was ist {0} plus {1}?",
    },
    "weekday": {
        "en": "Which day comes after {0}?", "fr": "Quel jour vient après {0} ?",
        "es": "¿Qué día viene después del {0}?", "de": "Welcher Tag kommt nach {0}?",
    },
}
# country (en, fr with its preposition, es, de) -> capital (en, fr, es, de)
CAPITALS: tuple[tuple[tuple[str, str, str, str], tuple[str, str, str, str]], ...] = (
    (("France", "de la France", "Francia", "Frankreich"), ("Paris", "Paris", "París", "Paris")),
    (("Germany", "de l'Allemagne", "Alemania", "Deutschland"), ("Berlin", "Berlin", "Berlín", "Berlin")),
    (("Italy", "de l'Italie", "Italia", "Italien"), ("Rome", "Rome", "Roma", "Rom")),
    (("Spain", "de l'Espagne", "España", "Spanien"), ("Madrid", "Madrid", "Madrid", "Madrid")),
    (("Japan", "du Japon", "Japón", "Japan"), ("Tokyo", "Tokyo", "Tokio", "Tokio")),
    (("Egypt", "de l'Égypte", "Egipto", "Ägypten"), ("Cairo", "Le Caire", "El Cairo", "Kairo")),
    (("Russia", "de la Russie", "Rusia", "Russland"), ("Moscow", "Moscou", "Moscú", "Moskau")),
    (("Greece", "de la Grèce", "Grecia", "Griechenland"), ("Athens", "Athènes", "Atenas", "Athen")),
    (("Portugal", "du Portugal", "Portugal", "Portugal"), ("Lisbon", "Lisbonne", "Lisboa", "Lissabon")),
    (("Poland", "de la Pologne", "Polonia", "Polen"), ("Warsaw", "Varsovie", "Varsovia", "Warschau")),
    (("Austria", "de l'Autriche", "Austria", "Österreich"), ("Vienna", "Vienne", "Viena", "Wien")),
    (("Norway", "de la Norvège", "Noruega", "Norwegen"), ("Oslo", "Oslo", "Oslo", "Oslo")),
    (("Sweden", "de la Suède", "Suecia", "Schweden"), ("Stockholm", "Stockholm", "Estocolmo", "Stockholm")),
)
WEEKDAYS_BY_LANGUAGE = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "fr": ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
    "es": ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
    "de": ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
}


def _item(rng: random.Random, kind: str) -> tuple[list[tuple[str, ...]], list[list[str]], int]:
    """Per-language template arguments, per-language options (canonical order) and the gold index."""
    args: list[tuple[str, ...]]
    if kind == "capital":
        picks = rng.sample(range(len(CAPITALS)), 4)
        args = [(CAPITALS[picks[0]][0][j],) for j in range(len(LANGUAGES))]
        options = [[CAPITALS[p][1][j] for p in picks] for j in range(len(LANGUAGES))]
    elif kind == "arithmetic":
        a, b = rng.randint(11, 49), rng.randint(11, 49)
        values = [a + b, *rng.sample([x for x in range(22, 99) if x != a + b], 3)]
        args = [(str(a), str(b))] * len(LANGUAGES)
        options = [[str(v) for v in values]] * len(LANGUAGES)
    else:
        day = rng.randrange(7)
        picks = [(day + 1) % 7, *rng.sample([d for d in range(7) if d not in (day, (day + 1) % 7)], 3)]
        args = [(WEEKDAYS_BY_LANGUAGE[lang][day],) for lang in LANGUAGES]
        options = [[WEEKDAYS_BY_LANGUAGE[lang][p] for p in picks] for lang in LANGUAGES]
    order = list(range(4))
    rng.shuffle(order)
    return args, [[row[k] for k in order] for row in options], order.index(0)


@generator("multilingual", version=1.0)
def multilingual(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Capital, arithmetic and next-weekday items, each asked in the four LANGUAGES."""
    rng = random.Random(seed)
    items = []
    for i in range(18 if n is None else n):
        kind, _ = plan(i, tuple(_TEMPLATES), levels=1)
        args, options, gold = _item(rng, kind)
        prompts = [
            f"{_TEMPLATES[kind][lang].format(*args[j])}\n{_ANSWER[lang]}" for j, lang in enumerate(LANGUAGES)
        ]
        items.append(forms_doc(f"multilingual:{i}", kind, prompts, options, gold))
    return items
