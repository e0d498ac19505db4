"""Less written per turn: sessions, runs and messages (a queued message's id too) get
time-ordered ids (hango_project/ids.py; a default, no change to the tables), and a message's run
is a ledger's reference, without the index and the foreign-key constraint only the run's
deletion used."""

import django.db.models.deletion
from django.db import migrations, models

import hango_project.ids


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0006_run_event_key'),
    ]

    operations = [
        migrations.AlterField(
            model_name='message',
            name='id',
            field=models.UUIDField(default=hango_project.ids.time_ordered_uuid, editable=False, primary_key=True, serialize=False),
        ),
        migrations.AlterField(
            model_name='run',
            name='id',
            field=models.UUIDField(default=hango_project.ids.time_ordered_uuid, editable=False, primary_key=True, serialize=False),
        ),
        migrations.AlterField(
            model_name='session',
            name='id',
            field=models.UUIDField(default=hango_project.ids.time_ordered_uuid, editable=False, primary_key=True, serialize=False),
        ),
        migrations.AlterField(
            model_name='message',
            name='run',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='messages', to='runs.run'),
        ),
        migrations.AlterField(
            model_name='pendingmessage',
            name='message_id',
            field=models.UUIDField(default=hango_project.ids.time_ordered_uuid, help_text='The id the message has once it joins the history.', unique=True),
        ),
    ]
