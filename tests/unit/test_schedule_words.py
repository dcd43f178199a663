"""Every kind of schedule Valet runs, in words in each language (triggers.schedule_words):
the days and times of a cron line, intervals, conditions, events, once; a task's state."""

from __future__ import annotations

import pytest

from persona.speaking import speaking_to
from triggers.cron import parse_cron
from triggers.model import ConditionCheck, EventFilter
from triggers.schedule_words import condition_words, describe_cron, event_words, every_seconds

CRONS = ["0 9 * * 1,4", "0 9,18 * * *", "*/30 8-18 * * 1-5", "0 */2 * * *", "15 * * * *",
         "0 9 1,15 * *", "15 10 * 3 *", "0 9 1 * 1", "7,31,44 3-5,9 * * *"]
SAID = {
    "en": ["Mondays and Thursdays at 9:00", "every day at 9:00 and 18:00",
           "every 30 minutes between 8:00 and 18:59, on weekdays", "every 2 hours",
           "every hour at minute 15", "on day 1 and 15 of the month at 9:00",
           "every day at 10:15, in March", "on the schedule “0 9 1 * 1”",
           "on the schedule “7,31,44 3-5,9 * * *”"],
    "es": ["los lunes y jueves a las 9:00", "todos los días a las 9:00 y 18:00",
           "cada 30 minutos entre las 8:00 y las 18:59, de lunes a viernes", "cada 2 horas",
           "cada hora, en el minuto 15", "el día 1 y 15 de cada mes a las 9:00",
           "todos los días a las 10:15, en marzo", "según el horario “0 9 1 * 1”",
           "según el horario “7,31,44 3-5,9 * * *”"],
    "fr": ["les lundis et jeudis à 9 h", "tous les jours à 9 h et 18 h",
           "toutes les 30 minutes entre 8 h et 18 h 59, en semaine", "toutes les 2 heures",
           "toutes les heures, à la minute 15", "le 1 et 15 de chaque mois à 9 h",
           "tous les jours à 10 h 15, en mars", "selon le calendrier “0 9 1 * 1”",
           "selon le calendrier “7,31,44 3-5,9 * * *”"],
    "de": ["montags und donnerstags um 9:00", "jeden Tag um 9:00 und 18:00",
           "alle 30 Minuten zwischen 8:00 und 18:59, werktags", "alle 2 Stunden",
           "stündlich zur Minute 15", "jeden Monat am Tag 1 und 15 um 9:00",
           "jeden Tag um 10:15, im März", "nach dem Zeitplan \"0 9 1 * 1\"",
           "nach dem Zeitplan \"7,31,44 3-5,9 * * *\""],
    "pt": ["segundas-feiras e quintas-feiras, às 09:00", "todos os dias às 09:00 e 18:00",
           "a cada 30 minutos entre 08:00 e 18:59, de segunda a sexta", "a cada 2 horas",
           "a cada hora, no minuto 15", "todo dia 1 e 15 do mês, às 09:00",
           "todos os dias às 10:15, em março", "conforme o agendamento “0 9 1 * 1”",
           "conforme o agendamento “7,31,44 3-5,9 * * *”"],
}


@pytest.mark.parametrize("language", sorted(SAID))
def test_every_cron_shape_in_words_in_each_language(language):
    with speaking_to(language):
        assert [describe_cron(parse_cron(cron)) for cron in CRONS] == SAID[language]


def test_intervals_conditions_and_events_in_words():
    check = ConditionCheck("check_price", {}, "<", 100)
    events = EventFilter("doorbell", "ring", {"door": "front"})
    assert every_seconds(7200) == "every 2 hours" and every_seconds(1800) == "every 30 minutes"
    assert condition_words(check, 3600) == "when check_price < 100 (checked every hour)"
    assert event_words(events) == "on doorbell/ring events, door=front"
    with speaking_to("es"):
        assert every_seconds(3600) == "cada hora"
        assert condition_words(ConditionCheck("inbox", {}, "contains", "Ana"), 900) == \
            "cuando inbox contiene 'Ana' (lo miro cada 15 minutos)"
        assert event_words(events) == "con los eventos doorbell/ring, door=front"
    with speaking_to("de"):
        assert every_seconds(7200) == "alle 2 Stunden"
        assert condition_words(check, 3600) == "wenn check_price < 100 (geprüft stündlich)"
